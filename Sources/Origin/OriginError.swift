/// Why a fetch from an origin failed: a code that callers match on and a sentence for people.
///
/// An HTTP status from the origin is never an error: 4xx and 5xx answers (after retries, for
/// 5xx) are returned as responses, since the gateway passes most of them through.
public struct OriginError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure. New codes can be added without breaking callers that switch on
    /// the ones they know.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case forbiddenAddress, timeout, connection, tooLarge, tooManyRedirects
            case invalidURL, invalidRequest, badRedirect, cancelled, busy
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The host is not in `allowOrigins`, or (without it) the address connected to is not
        /// public. No connection was made.
        public static let forbiddenAddress = Code(.forbiddenAddress)
        /// No byte for the idle timeout, no connection within the connect timeout, or the
        /// total timeout passed.
        public static let timeout = Code(.timeout)
        /// The connection failed, was reset or closed early, or the answer was not HTTP.
        public static let connection = Code(.connection)
        /// The body is larger than the configured maximum.
        public static let tooLarge = Code(.tooLarge)
        /// More redirects than the configured maximum (5).
        public static let tooManyRedirects = Code(.tooManyRedirects)
        /// The request's URL is not an absolute http(s) URL.
        public static let invalidURL = Code(.invalidURL)
        /// A request header that is not a valid field (empty name, a colon in the name, CR/LF/NUL).
        public static let invalidRequest = Code(.invalidRequest)
        /// A redirect without a usable `Location` (missing, unparsable, or not http(s)).
        public static let badRedirect = Code(.badRedirect)
        /// The caller's task was cancelled, the body was dropped, or the client shut down.
        public static let cancelled = Code(.cancelled)
        /// Every connection slot to the host stayed taken for the request's total timeout:
        /// the request was never sent (a timeout of this client's, not the host's).
        public static let busy = Code(.busy)

        public var description: String { base.rawValue }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The status the gateway answers with when this error ends a request (SPEC section 1):
    /// 403 for a forbidden origin, 504 for a timeout, 400 for a URL or header the gateway was
    /// asked to send that cannot be sent, 502 for everything else.
    public var httpStatusForGateway: Int {
        switch code {
        case .forbiddenAddress: 403
        case .timeout, .busy: 504
        case .invalidURL, .invalidRequest: 400
        default: 502
        }
    }

    public var description: String { "\(message) [\(code)]" }
}
