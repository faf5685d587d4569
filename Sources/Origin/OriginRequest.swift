/// One request to an origin: an absolute http(s) URL, GET or HEAD, an optional byte range and
/// extra headers. Both methods are idempotent, so every request may be retried. POST (with a
/// body) is for the command line's calls to a gateway's API: it is never retried.
public struct OriginRequest: Sendable {
    /// The HTTP methods the gateway needs from an origin.
    public enum Method: String, Sendable, Hashable {
        case get = "GET"
        case head = "HEAD"
        case post = "POST"
    }

    /// A single byte range, as in `Range: bytes=...` (RFC 9110 section 14.1.2).
    public enum ByteRange: Sendable, Hashable, CustomStringConvertible {
        /// Bytes `first` through `last`, both included.
        case closed(first: Int64, last: Int64)
        /// The last `length` bytes.
        case suffix(length: Int64)
        /// From `first` to the end.
        case from(first: Int64)

        /// The range as written after `bytes=`: "0-99", "-500", "100-".
        public var description: String {
            switch self {
            case .closed(let first, let last): "\(first)-\(last)"
            case .suffix(let length): "-\(length)"
            case .from(let first): "\(first)-"
            }
        }
    }

    /// Timeouts for one request that replace the client's configured ones; nil keeps those.
    public struct Timeouts: Sendable, Hashable {
        public var connect: Duration?
        public var idle: Duration?
        public var total: Duration?

        public init(connect: Duration? = nil, idle: Duration? = nil, total: Duration? = nil) {
            self.connect = connect
            self.idle = idle
            self.total = total
        }
    }

    /// An absolute http or https URL; its query is sent as written.
    public var url: String
    public var method: Method
    public var range: ByteRange?
    /// Extra request headers (`If-Range`, `If-None-Match`...), sent in order. `Range` belongs
    /// in `range`; `Host` and `User-Agent` are the client's.
    public var headers: [(name: String, value: String)]
    public var timeouts: Timeouts
    /// The largest body accepted for this request, in bytes; nil keeps the client's maximum.
    public var maxBodySize: Int64?
    /// What a POST sends.
    public var body: [UInt8]
    /// The origin holds this request until it has something new (a low-latency playlist's
    /// blocking reload): it waits for a slot among the host's long polls, not among its other
    /// transfers, which it would keep from their slots for seconds.
    public var longPoll: Bool

    public init(
        url: String, method: Method = .get, range: ByteRange? = nil,
        headers: [(name: String, value: String)] = [], timeouts: Timeouts = Timeouts(),
        maxBodySize: Int64? = nil, body: [UInt8] = [], longPoll: Bool = false
    ) {
        self.body = body
        self.longPoll = longPoll
        self.url = url
        self.method = method
        self.range = range
        self.headers = headers
        self.timeouts = timeouts
        self.maxBodySize = maxBodySize
    }
}
