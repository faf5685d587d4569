import Testing

@testable import Origin

/// Bodies stream through a bounded buffer: a slow reader pauses the transfer, and the
/// origin is held back instead of the client buffering the whole body.
@Suite("Streaming with backpressure")
struct StreamingTests {
    static let size = 32 << 20
    static let bound = 1 << 20

    @Test func slowReaderGetsEveryByteWithBoundedBuffer() async throws {
        try await withOrigin({ $0.bodyBufferSize = Self.bound }) { origin, client in
            let response = try await client.fetch(OriginRequest(url: origin.url("/bytes/\(Self.size)?key=big")))
            #expect(response.status == 200)
            #expect(response.header("content-length") == "\(Self.size)")

            var iterator = response.body.makeAsyncIterator()
            var offset = 0
            var mismatch: Int?
            func check(_ chunk: [UInt8]) {
                if mismatch == nil && !isExpectedContent(chunk, at: offset) { mismatch = offset }
                offset += chunk.count
            }
            while offset < Self.bound, let chunk = try await iterator.next() { check(chunk) }

            // The reader stops for a while: the transfer pauses and the origin stays blocked
            // with most of the body unsent.
            try await Task.sleep(for: .seconds(1))
            let stalled = try await origin.counts("big")
            #expect(stalled.inflight == 1)
            #expect(stalled.sent < Self.size / 2)

            while let chunk = try await iterator.next() { check(chunk) }
            #expect(offset == Self.size)
            #expect(mismatch == nil)
            // libcurl hands over at most 16 KiB per write callback, so one chunk past the bound.
            #expect(response.body.bufferHighWater <= Self.bound + 16 << 10)
            #expect(try await origin.counts("big").sent == Self.size)
        }
    }

    @Test func pausedTransferDoesNotTimeOut() async throws {
        try await withOrigin({
            $0.bodyBufferSize = 64 << 10
            $0.idleTimeout = .milliseconds(500)
        }) { origin, client in
            let response = try await client.fetch(OriginRequest(url: origin.url("/bytes/\(4 << 20)")))
            var iterator = response.body.makeAsyncIterator()
            var total = try await iterator.next()?.count ?? 0
            // Longer than the idle timeout, while the buffer is full and libcurl is paused.
            try await Task.sleep(for: .seconds(2))
            while let chunk = try await iterator.next() { total += chunk.count }
            #expect(total == 4 << 20)
        }
    }

    /// A consumer that leaves its transfer paused (reads nothing) for `pausedLimit` loses it,
    /// and the host's slot with it: a client of the gateway that read nothing held the slot for
    /// as long as it stayed connected, and eight such took every request to the host.
    @Test func aTransferLeftPausedLetsItsSlotGo() async throws {
        try await withOrigin({
            $0.bodyBufferSize = 64 << 10
            $0.maxConcurrentPerHost = 1
            $0.pausedLimit = .seconds(1)
        }) { origin, client in
            let stalled = try await client.fetch(OriginRequest(url: origin.url("/bytes/\(4 << 20)")))
            var iterator = stalled.body.makeAsyncIterator()
            _ = try await iterator.next()
            // The only slot is the stalled transfer's until its reader has left it for a second.
            let next = try await client.fetch(OriginRequest(url: origin.url("/bytes/1000"), timeouts: .init(total: .seconds(10))))
            #expect(try await next.body.collect(upTo: 1 << 20).count == 1000)
            do throws(OriginError) {
                while try await iterator.next() != nil {}
                Issue.record("the stalled transfer ran to its end")
            } catch {
                #expect(error.code == .timeout && error.message.contains("left it paused"), "\(error)")
            }
        }
    }

    /// The bytes as the origin holds them: asked without an Accept-Encoding, an origin may
    /// send any coding (RFC 9110 12.5.3).
    @Test func theOriginIsAskedForTheBytesAsTheyAre() async throws {
        try await withOrigin { origin, client in
            let response = try await client.fetch(OriginRequest(url: origin.url("/accept-encoding")))
            #expect(String(decoding: try await response.body.collect(upTo: 1000), as: UTF8.self) == "identity")
            let asked = try await client.fetch(OriginRequest(url: origin.url("/accept-encoding"), headers: [(name: "Accept-Encoding", value: "br")]))
            #expect(String(decoding: try await asked.body.collect(upTo: 1000), as: UTF8.self) == "br")
        }
    }

    @Test func headHasNoBody() async throws {
        try await withOrigin { origin, client in
            let response = try await client.fetch(OriginRequest(url: origin.url("/bytes/5000"), method: .head))
            #expect(response.status == 200)
            #expect(response.header("Content-Length") == "5000")
            #expect(try await response.body.collect(upTo: 1 << 20).isEmpty)
        }
    }
}
