import Testing

import Origin

/// An origin that breaks mid-body, stalls or sends too much: the body ends with an error,
/// never with a clean end after short data.
@Suite("Origin faults")
struct FaultTests {
    @Test(arguments: ["/reset", "/reset?fin=1"])
    func brokenBodyThrows(path: String) async throws {
        try await withOrigin { origin, client in
            let response = try await client.fetch(OriginRequest(url: origin.url(path)))
            #expect(response.status == 200)
            var received = 0
            let error = await failure {
                for try await chunk in response.body { received += chunk.count }
            }
            #expect(error?.code == .connection)
            #expect(error?.httpStatusForGateway == 502)
            #expect(received <= 5000)
        }
    }

    /// Response headers past 256 KiB end the fetch, once: libcurl's own limit (or its memory)
    /// failed it as a connection error, and each was asked three times.
    @Test func hugeResponseHeadersAreRefusedOnce() async throws {
        try await withOrigin { origin, client in
            let error = await failure { try await client.fetch(OriginRequest(url: origin.url("/bigheaders/400000?key=big-headers"))) }
            #expect(error?.code == .tooLarge, "\(String(describing: error))")
            #expect(try await origin.counts("big-headers").requests == 1)
            // Headers under the bound are read as ever.
            let fine = try await client.fetch(OriginRequest(url: origin.url("/bigheaders/100000?key=fine-headers")))
            let body = try await fine.body.collect(upTo: 100)
            #expect(fine.status == 200 && String(decoding: body, as: UTF8.self) == "ok")
        }
    }

    @Test func stalledOriginTimesOut() async throws {
        try await withOrigin({ $0.idleTimeout = .seconds(1) }) { origin, client in
            let start = ContinuousClock.now
            let error = await failure {
                let response = try await client.fetch(OriginRequest(url: origin.url("/stall")))
                return try await response.body.collect(upTo: 100)
            }
            let elapsed = ContinuousClock.now - start
            #expect(error?.code == .timeout)
            #expect(error?.httpStatusForGateway == 504)
            // Well under the 10 s default either way: a bound with room for a loaded machine.
            #expect(elapsed >= .seconds(1) && elapsed < .seconds(8))
        }
    }

    @Test func perRequestIdleTimeout() async throws {
        try await withOrigin { origin, client in
            let request = OriginRequest(url: origin.url("/stall"), timeouts: .init(idle: .milliseconds(500)))
            let start = ContinuousClock.now
            let error = await failure { try await client.fetch(request).body.collect(upTo: 100) }
            #expect(error?.code == .timeout)
            // The client's own idle timeout is 10 s: ending well before it shows the request's took over.
            #expect(ContinuousClock.now - start < .seconds(8))
        }
    }

    @Test func totalTimeoutEndsASteadyButLongTransfer() async throws {
        try await withOrigin({ $0.totalTimeout = .seconds(1) }) { origin, client in
            let error = await failure {
                try await client.fetch(OriginRequest(url: origin.url("/slow/100?delay=0.05"))).body.collect(upTo: 1000)
            }
            #expect(error?.code == .timeout)
        }
    }

    @Test func slowButSteadyOriginIsFine() async throws {
        try await withOrigin({ $0.idleTimeout = .seconds(1) }) { origin, client in
            let response = try await client.fetch(OriginRequest(url: origin.url("/slow/30?delay=0.05")))
            let body = try await response.body.collect(upTo: 100)
            #expect(body.count == 30 && isExpectedContent(body, at: 0))
        }
    }

    @Test func bodyOverTheCapWithLength() async throws {
        try await withOrigin({ $0.maxBodySize = 4000 }) { origin, client in
            let error = await failure { try await client.fetch(OriginRequest(url: origin.url("/bytes/5000"))) }
            #expect(error?.code == .tooLarge)
            let fits = try await client.fetch(OriginRequest(url: origin.url("/bytes/4000")))
            #expect(try await fits.body.collect(upTo: 1 << 20).count == 4000)
        }
    }

    @Test func bodyOverTheCapWithoutLength() async throws {
        try await withOrigin { origin, client in
            let request = OriginRequest(url: origin.url("/bytes/300000?nolength=1"), maxBodySize: 100_000)
            let response = try await client.fetch(request)
            var received = 0
            let error = await failure {
                for try await chunk in response.body { received += chunk.count }
            }
            #expect(error?.code == .tooLarge)
            #expect(received <= 100_000)
        }
    }
}
