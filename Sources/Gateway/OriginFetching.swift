import Origin

/// What the gateway needs from an origin client: one GET, its status, headers, effective URL
/// (after redirects) and a body that streams. The libcurl client of the `Origin` module is the
/// one implementation; the seam keeps the gateway's routes independent of its details.
public protocol OriginFetching: Sendable {
    func fetch(_ request: OriginFetch) async throws(OriginFetchError) -> OriginAnswer
    /// Why `url` would be refused before any connection (its host not allowed), or nil.
    func refusal(of url: String) -> String?
}

/// One request to an origin.
public struct OriginFetch: Sendable {
    public var url: String
    /// A Range header value to send, e.g. `bytes=0-99`.
    public var range: String?
    public var maxBodySize: Int?
    /// How long the origin may send nothing, when not the client's configured time.
    public var idleTimeout: Duration?
    /// The origin holds the request until it has something new (a blocking reload): it does
    /// not wait for, nor hold, one of the host's slots for other transfers.
    public var longPoll: Bool

    public init(url: String, range: String? = nil, maxBodySize: Int? = nil, idleTimeout: Duration? = nil, longPoll: Bool = false) {
        self.url = url
        self.longPoll = longPoll
        self.range = range
        self.maxBodySize = maxBodySize
        self.idleTimeout = idleTimeout
    }
}

/// An origin's answer; the body is consumed once.
public struct OriginAnswer: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var effectiveURL: String
    public var body: AsyncThrowingStream<[UInt8], any Error>
    /// Another request was given this same answer of the origin's already (a fetch that
    /// several requests share): its bytes count as cache, not as the CDN's again.
    public var servedBefore = false
    /// The body is bytes already read (a shared fetch's, collected once): reading it has no
    /// origin to wait for.
    public var bodyInMemory = false

    public init(status: Int, headers: [(name: String, value: String)], effectiveURL: String, body: AsyncThrowingStream<[UInt8], any Error>) {
        self.status = status
        self.headers = headers
        self.effectiveURL = effectiveURL
        self.body = body
    }

    public func header(_ name: String) -> String? {
        headers.last { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// A header as relayed to a player: a list field's lines joined (`Cache-Control` sent as
    /// two lines is both), another's last line.
    func relayed(_ name: String) -> String? {
        name.lowercased() == "cache-control" ? HTTPList.joined(headers, name) : header(name)
    }
}

/// Why an origin could not be fetched, as the gateway answers it (SPEC section 1).
public struct OriginFetchError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable { case forbidden, timeout, failed, tooLarge }
    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    var failure: GatewayFailure {
        switch kind {
        case .forbidden: return GatewayFailure(.forbidden, message)
        case .timeout: return GatewayFailure(.gatewayTimeout, message)
        case .failed, .tooLarge: return GatewayFailure(.badGateway, message)
        }
    }
}
