import Testing

import Gateway

/// RFC 9110 section 14 against a 1,000-byte representation.
@Suite("Range requests")
struct RangeRequestTests {
    @Test(arguments: [
        (nil, RangeRequest.full),
        ("bytes=0-99", .partial(0...99)),
        ("bytes=900-", .partial(900...999)),
        ("bytes=-100", .partial(900...999)),
        ("bytes=-5000", .partial(0...999)),
        ("bytes=990-5000", .partial(990...999)),
        ("bytes = 10-19", .partial(10...19)),
        ("bytes=1000-", .unsatisfiable),
        ("bytes=5000-6000", .unsatisfiable),
        ("bytes=-0", .unsatisfiable),
        ("bytes=0-1,5-6", .full),
        // Empty list elements are ignored (RFC 9110 5.6.1.2).
        ("bytes=1-2,", .partial(1...2)),
        ("bytes=, 1-2 ,,", .partial(1...2)),
        ("items=0-5", .full),
        // Numbers past Int64 are valid syntax (RFC 9110 14.1.1), past any end.
        ("bytes=99999999999999999999-", .unsatisfiable),
        ("bytes=10-99999999999999999999", .partial(10...999)),
        ("bytes=-99999999999999999999", .partial(0...999)),
    ] as [(String?, RangeRequest)])
    func resolves(header: String?, expected: RangeRequest) throws {
        #expect(try RangeRequest.resolve(header, length: 1000) == expected)
    }

    @Test(arguments: ["bytes=", "bytes=abc", "bytes=5-1", "bytes=-", "0-5", "bytes=,", "bytes= , ", "bytes=--5", "bytes=5-4x"])
    func badSyntaxIsAnError(header: String) {
        #expect(throws: RangeRequest.SyntaxError.self) { try RangeRequest.resolve(header, length: 1000) }
    }

    @Test func anEmptyRepresentationHasNoSatisfiableRange() throws {
        #expect(try RangeRequest.resolve("bytes=0-", length: 0) == .unsatisfiable)
        #expect(try RangeRequest.resolve("bytes=-1", length: 0) == .unsatisfiable)
    }
}
