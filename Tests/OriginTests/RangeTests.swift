import Testing

import Origin

/// Byte ranges reach the origin as `Range: bytes=...`; its 206, 416 and 304 come back as
/// they are.
@Suite("Ranges and conditional requests")
struct RangeTests {
    @Test(arguments: [
        (OriginRequest.ByteRange.closed(first: 100, last: 199), 100, 100, "bytes 100-199/1000"),
        (.suffix(length: 10), 990, 10, "bytes 990-999/1000"),
        (.from(first: 900), 900, 100, "bytes 900-999/1000"),
        (.closed(first: 990, last: 5000), 990, 10, "bytes 990-999/1000"),
    ])
    func satisfiableRange(range: OriginRequest.ByteRange, first: Int, count: Int, contentRange: String) async throws {
        try await withOrigin { origin, client in
            let response = try await client.fetch(OriginRequest(url: origin.url("/bytes/1000"), range: range))
            #expect(response.status == 206)
            #expect(response.header("Content-Range") == contentRange)
            let body = try await response.body.collect(upTo: 1 << 20)
            #expect(body.count == count)
            #expect(isExpectedContent(body, at: first))
        }
    }

    @Test func unsatisfiableRangePassesThrough() async throws {
        try await withOrigin { origin, client in
            let response = try await client.fetch(OriginRequest(url: origin.url("/bytes/1000"), range: .from(first: 2000)))
            #expect(response.status == 416)
            #expect(response.header("content-range") == "bytes */1000")
        }
    }

    @Test func extraHeadersReachTheOrigin() async throws {
        try await withOrigin { origin, client in
            let request = OriginRequest(url: origin.url("/bytes/1000"), headers: [("If-None-Match", "\"bytes-1000\"")])
            let response = try await client.fetch(request)
            #expect(response.status == 304)
            #expect(response.header("ETag") == "\"bytes-1000\"")
            let denied = try await client.fetch(OriginRequest(url: origin.url("/need-token?token=wrong")))
            #expect(denied.status == 403)
            let allowed = try await client.fetch(OriginRequest(url: origin.url("/need-token?token=secret")))
            #expect(try await allowed.body.collect(upTo: 100) == Array("ok".utf8))
        }
    }

    @Test func headerWithLineBreakIsRefused() async throws {
        try await withOrigin { origin, client in
            let request = OriginRequest(url: origin.url("/bytes/10?key=crlf"), headers: [("X-A", "1\r\nX-B: 2")])
            #expect(await failure { try await client.fetch(request) }?.code == .invalidRequest)
            let counts = try await origin.counts("crlf")
            #expect(counts.requests == 0)
        }
    }
}
