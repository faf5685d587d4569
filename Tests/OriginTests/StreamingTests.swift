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

    @Test func headHasNoBody() async throws {
        try await withOrigin { origin, client in
            let response = try await client.fetch(OriginRequest(url: origin.url("/bytes/5000"), method: .head))
            #expect(response.status == 200)
            #expect(response.header("Content-Length") == "5000")
            #expect(try await response.body.collect(upTo: 1 << 20).isEmpty)
        }
    }
}
