import Testing

@testable import Manifest

/// libxml2 is linked and initialised: the DASH rewriter is built on it.
@Suite("libxml2")
struct LibXMLTests {
    @Test func isAtLeastTwoNine() {
        #expect(LibXML.version >= 20900)
    }
}
