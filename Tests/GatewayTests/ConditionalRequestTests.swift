@testable import Gateway
import Testing

/// RFC 9110 13.1's preconditions on a cached copy, as units (a gateway answers them in
/// `aClientThatHoldsTheCachedCopyIsAnswered304`).
@Suite("Conditional requests")
struct ConditionalRequestTests {
    typealias Conditions = GatewayResponder.Conditions

    @Test func anEntityTagMayHoldACommaInsideItsQuotes() {
        #expect(Conditions.entityTags(#""a,b", W/"c" ,"d""#) == [#""a,b""#, #"W/"c""#, #""d""#])
        #expect(Conditions(ifNoneMatch: #""x", "a,b""#).holdsCopy(etag: #""a,b""#, lastModified: nil))
        #expect(!Conditions(ifNoneMatch: #""a", "b""#).holdsCopy(etag: #""a,b""#, lastModified: nil))
    }

    /// A recipient reads all three HTTP date forms (RFC 9110 5.6.7).
    @Test(arguments: ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"])
    func everyHTTPDateFormIsRead(date: String) {
        #expect(HTTPDate.seconds(date) == 784_111_777)
        #expect(Conditions(ifModifiedSince: date).holdsCopy(etag: nil, lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"))
        #expect(!Conditions(ifModifiedSince: date).holdsCopy(etag: nil, lastModified: "Sun, 06 Nov 1994 08:49:38 GMT"))
    }
}
