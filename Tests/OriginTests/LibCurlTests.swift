import Testing

import Origin

/// libcurl is linked and answers: the gateway's origin client is built on it.
@Suite("libcurl")
struct LibCurlTests {
    @Test func speaksHTTPAndHTTPS() {
        #expect(LibCurl.protocols.contains("http"))
        #expect(LibCurl.protocols.contains("https"))
    }

    @Test func reportsItsVersion() {
        let parts = LibCurl.version.split(separator: ".").compactMap { Int($0) }
        #expect(parts.count == 3)
        #expect((parts.first ?? 0) >= 7)
    }
}
