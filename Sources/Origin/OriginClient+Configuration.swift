extension OriginClient {
    /// How the client fetches: timeouts, retries, limits, HTTP version and the address policy.
    public struct Configuration: Sendable {
        /// The HTTP versions the client offers.
        public enum HTTPVersion: Sendable, Hashable {
            /// HTTP/1.1 only.
            case http1_1
            /// HTTP/2 over TLS when the server offers it (ALPN), HTTP/1.1 otherwise and for http://.
            case http2OverTLS
        }

        /// No TCP connection (and TLS handshake) within this → `.timeout`.
        public var connectTimeout: Duration = .seconds(5)
        /// No byte received for this long → `.timeout`. Counts from the start of each attempt;
        /// time spent paused because the consumer's buffer is full does not count.
        public var idleTimeout: Duration = .seconds(10)
        /// The consumer may leave a transfer paused (its buffer full, not read down to half) this long,
        /// then it is aborted with `.timeout`: a paused transfer holds one of its host's
        /// `maxConcurrentPerHost` slots, and a client of the gateway that reads nothing held
        /// one for as long as it stayed connected (eight such took every request to the host).
        /// As nginx's `send_timeout` (60 s).
        public var pausedLimit: Duration = .seconds(60)
        /// The whole attempt (connect, headers, body) within this, or `.timeout`; nil: no limit.
        /// Unlike the idle timeout it keeps running while the consumer reads slowly.
        public var totalTimeout: Duration?
        /// Redirects followed per fetch; one more → `.tooManyRedirects`.
        public var maxRedirects = 5
        /// Attempts after the first, for connection errors and 5xx answers. Only before the
        /// response is handed to the caller: a failure in the body is never retried.
        public var retries = 2
        /// The wait before retry n is `retryBaseDelay * 2^(n-1)`, at most `retryMaxDelay`,
        /// times a random factor in 0.5...1 (jitter).
        public var retryBaseDelay: Duration = .milliseconds(200)
        public var retryMaxDelay: Duration = .seconds(2)
        /// Transfers in flight per origin `host:port`; further requests wait for a slot.
        public var maxConcurrentPerHost = 8
        /// Long polls (`OriginRequest.longPoll`) in flight per origin `host:port`, counted
        /// apart from the other transfers so that parked requests never hold up the rest.
        public var maxLongPollsPerHost = 64
        /// The largest body accepted, in bytes; past it the transfer is aborted with
        /// `.tooLarge`. nil: no limit. A request can set its own.
        public var maxBodySize: Int64? = 1 << 32
        /// How many body bytes wait for the consumer before the transfer is paused.
        public var bodyBufferSize = 1 << 20
        public var httpVersion = HTTPVersion.http2OverTLS
        public var userAgent = "swarmgate/0.1"
        /// A `Via` header sent with every request (RFC 9110 section 7.6.3), naming this proxy:
        /// a request that comes back to it (a URL that names the gateway itself) is known.
        public var via: String?
        public var addressPolicy = AddressPolicy()
        /// PEM certificates of the authorities that TLS origins are verified against; nil:
        /// the system's store. Verification of the peer and its host name is always on.
        public var caFile: String?

        public init() {}

        /// The wait before retry number `attempt` (1-based), with jitter.
        func retryDelay(attempt: Int) -> Duration {
            let exponent = min(max(attempt - 1, 0), 30)
            let base = min(retryBaseDelay * (1 << exponent), retryMaxDelay)
            return base * Double.random(in: 0.5...1)
        }
    }
}
