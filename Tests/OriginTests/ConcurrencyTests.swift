import Testing

import Origin

/// The per-host cap, cancellation, dropped bodies and shutdown: the client's resources come
/// back whatever the consumer does.
@Suite("Concurrency, cancellation and shutdown")
struct ConcurrencyTests {
    @Test func perHostCap() async throws {
        try await withOrigin({ $0.maxConcurrentPerHost = 2 }) { origin, client in
            let url = origin.url("/slow/8?delay=0.04&key=cap")
            let sizes = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<6 {
                    group.addTask { try await client.fetch(OriginRequest(url: url)).body.collect(upTo: 100).count }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(sizes == Array(repeating: 8, count: 6))
            let counts = try await origin.counts("cap")
            #expect(counts.requests == 6)
            #expect(counts.max_inflight == 2)
        }
    }

    /// Long polls (blocking reloads the origin holds) have slots of their own: capped apart,
    /// and other requests to the host do not wait for them.
    @Test func longPollsHaveSlotsOfTheirOwn() async throws {
        try await withOrigin({
            $0.maxConcurrentPerHost = 1
            $0.maxLongPollsPerHost = 2
        }) { origin, client in
            // Three polls of 4 s: two at once, the third after them.
            let url = origin.url("/slow/8?delay=0.5&key=poll")
            let polls = Task {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<3 {
                        group.addTask { try await client.fetch(OriginRequest(url: url, longPoll: true)).body.collect(upTo: 100).count }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
            }
            try await waitUntil { try await origin.counts("poll").inflight > 0 }
            let other = try await client.fetch(OriginRequest(url: origin.url("/bytes/10")))
            #expect(try await other.body.collect(upTo: 100).count == 10)
            #expect(try await origin.counts("poll").inflight > 0, "answered while the long polls were parked")
            #expect(try await polls.value == Array(repeating: 8, count: 3))
            #expect(try await origin.counts("poll").max_inflight == 2)
        }
    }

    /// The wait for a connection slot counts against a request's total timeout (a peer's
    /// piece has a deadline, and every slot to a slow peer may be taken): with the host's only
    /// slot held by a slow body, a request of 300 ms fails (`busy`: never sent) while the slot
    /// is still held. It waited for the slot, and its timeout began only then. The slot, once free, goes
    /// to the next request, not to the one that gave up.
    @Test func theWaitForASlotCountsAgainstTheTotalTimeout() async throws {
        try await withOrigin({ $0.maxConcurrentPerHost = 1 }) { origin, client in
            // 10 s of body: the checks below come long before its end, even on a loaded host.
            let dripping = try await client.fetch(OriginRequest(url: origin.url("/slow/200?delay=0.05&key=slot")))
            let drained = Task { try await dripping.body.collect(upTo: 1000).count }
            do {
                let r = try await client.fetch(OriginRequest(url: origin.url("/bytes/10"), timeouts: .init(total: .milliseconds(300))))
                Issue.record("answered \(r.status) once the slot was free")
            } catch {
                #expect((error as? OriginError)?.code == .busy, "\(error)")
            }
            #expect(try await origin.counts("slot").inflight == 1, "it gave up while the slot was held")
            #expect(try await drained.value == 200)
            let next = try await client.fetch(OriginRequest(url: origin.url("/bytes/10"), timeouts: .init(total: .seconds(5))))
            #expect(try await next.body.collect(upTo: 100).count == 10)
        }
    }

    @Test func droppedBodyFreesTheSlot() async throws {
        try await withOrigin({ $0.maxConcurrentPerHost = 1 }) { origin, client in
            do {
                let dripping = try await client.fetch(OriginRequest(url: origin.url("/slow/1000?delay=0.05&key=drop")))
                #expect(dripping.status == 200)
            }
            // With the only slot still taken this would wait 50 s for the body above, and fail.
            let request = OriginRequest(url: origin.url("/bytes/10"), timeouts: .init(total: .seconds(5)))
            let next = try await client.fetch(request)
            #expect(try await next.body.collect(upTo: 100).count == 10)
            try await waitUntil { try await origin.counts("drop").inflight == 0 }
        }
    }

    @Test func cancellingAWaitingFetchKeepsTheSlotCount() async throws {
        try await withOrigin({ $0.maxConcurrentPerHost = 1 }) { origin, client in
            var first: OriginResponse? = try await client.fetch(OriginRequest(url: origin.url("/slow/1000?delay=0.05")))
            let url = origin.url("/bytes/1")
            let waiting = Task { await failure { try await client.fetch(OriginRequest(url: url)) } }
            try await Task.sleep(for: .milliseconds(200))
            waiting.cancel()
            #expect(await waiting.value?.code == .cancelled)
            #expect(first?.status == 200)
            first = nil  // frees the only slot
            let request = OriginRequest(url: origin.url("/bytes/10"), timeouts: .init(total: .seconds(5)))
            let next = try await client.fetch(request)
            #expect(try await next.body.collect(upTo: 100).count == 10)
        }
    }

    @Test func cancellingTheReaderAbortsTheTransfer() async throws {
        try await withOrigin { origin, client in
            let response = try await client.fetch(OriginRequest(url: origin.url("/slow/400?delay=0.02&key=cancel")))
            let reader = Task {
                var received = 0
                let error = await failure { for try await chunk in response.body { received += chunk.count } }
                return (received, error)
            }
            try await Task.sleep(for: .milliseconds(200))
            reader.cancel()
            let (received, error) = await reader.value
            #expect(error?.code == .cancelled)
            #expect(received < 400)
            try await waitUntil { try await origin.counts("cancel").inflight == 0 }
        }
    }

    @Test func shutdownEndsTransfersAndLaterFetches() async throws {
        let origin = try await FaultOrigin.start()
        let client = makeClient(allowing: origin)
        let response = try await client.fetch(OriginRequest(url: origin.url("/stall")))
        await client.shutdown()
        #expect(await failure { try await response.body.collect(upTo: 100) }?.code == .cancelled)
        #expect(await failure { try await client.fetch(OriginRequest(url: origin.url("/bytes/1"))) }?.code == .cancelled)
        await origin.stop()
    }

    /// Polls `condition` for up to 5 s; the origin notices a closed connection on its next write.
    private func waitUntil(_ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while try await !condition() {
            try #require(ContinuousClock.now < deadline, "condition not met within 5 s")
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
