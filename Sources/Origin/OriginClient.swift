/// The gateway's HTTP client for origins (CDNs), on libcurl's multi interface driven by one
/// dedicated thread for all transfers. It follows redirects itself (each hop checked against
/// the address policy), retries connection errors and 5xx answers with backoff and jitter,
/// caps concurrent transfers per origin host (long polls apart), and streams bodies with
/// backpressure.
///
/// Statuses are not errors: a 404 or a 416 (or a 5xx once the retries are spent) comes back as
/// a response. Redirects (301, 302, 303, 307, 308 with a `Location`) are followed up to
/// `maxRedirects`, including from https to http: the address policy, not the scheme, is what
/// keeps a hop safe, and http origins are allowed in the first place.
public final class OriginClient: Sendable {
    public let configuration: Configuration
    private let loop: CurlLoop
    private let limiter: HostLimiter
    private let longPollLimiter: HostLimiter

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.loop = CurlLoop()
        self.limiter = HostLimiter(limit: configuration.maxConcurrentPerHost)
        self.longPollLimiter = HostLimiter(limit: configuration.maxLongPollsPerHost)
    }

    deinit {
        loop.requestStop()
    }

    /// Stops the client's thread; running transfers fail with `.cancelled`, later fetches too.
    public func shutdown() async {
        await loop.stop()
    }

    /// Why `url` would be refused before any connection, its host not being in the allow
    /// list, or nil. Its addresses are checked only as it is fetched, and a URL that cannot be
    /// read fails then.
    public func refusal(of url: String) -> String? {
        guard let u = try? CurlURL(url) else { return nil }
        return configuration.addressPolicy.refusal(host: u.host, port: u.port)
    }

    /// Fetches `request`, following redirects, and returns once the response head is in; the
    /// body streams afterwards.
    public func fetch(_ request: OriginRequest) async throws(OriginError) -> OriginResponse {
        var url = try CurlURL(request.url)
        var method = request.method
        var redirects = 0
        while true {
            if let refusal = configuration.addressPolicy.refusal(host: url.host, port: url.port) {
                throw OriginError(.forbiddenAddress, refusal)
            }
            let (transfer, head) = try await attempt(request, url: url, method: method)
            guard [301, 302, 303, 307, 308].contains(head.status), let location = head.value(of: "Location") else {
                return OriginResponse(
                    status: head.status, headers: head.headers, effectiveURL: url.string, body: OriginBody(transfer))
            }
            transfer.abandon()
            redirects += 1
            guard redirects <= configuration.maxRedirects else {
                throw OriginError(.tooManyRedirects, "more than \(configuration.maxRedirects) redirects from \(request.url)")
            }
            guard let next = CurlURL(location: location, relativeTo: url) else {
                throw OriginError(.badRedirect, "\(url.string) redirects to unusable Location \(location.debugDescription)")
            }
            // As browsers and curl do: a 303, and a 301 or 302 after a POST, are followed by GET.
            if (head.status == 303 && method != .head) || (method == .post && head.status != 307 && head.status != 308) { method = .get }
            url = next
        }
    }

    /// One hop: runs the request, retrying connection errors and 5xx answers, until a head
    /// comes back that the caller gets, or an error that is not retried.
    private func attempt(
        _ request: OriginRequest, url: CurlURL, method: OriginRequest.Method
    ) async throws(OriginError) -> (Transfer, ResponseHead) {
        let limiter = request.longPoll ? longPollLimiter : self.limiter
        var retry = 0
        while true {
            // The wait for a connection slot counts against the total timeout: a peer's piece
            // has a deadline, and the slots to a slow peer may all be taken.
            let queued = ContinuousClock.now
            try await limiter.acquire(url.hostKey, within: request.timeouts.total)
            var timed = request
            if let total = request.timeouts.total {
                let left = total - (ContinuousClock.now - queued)
                guard left > .zero else {
                    limiter.release(url.hostKey)
                    throw OriginError(.busy, "no connection slot to \(url.hostKey) within \(total)")
                }
                timed.timeouts.total = left
            }
            let options = TransferOptions(timed, url: url, method: method, configuration: configuration)
            let transfer = try Transfer(options, loop: loop, limiter: limiter)
            guard loop.add(transfer) else {
                transfer.complete(OriginError(.cancelled, "the origin client shut down"))
                throw OriginError(.cancelled, "the origin client shut down")
            }
            let outcome = await transfer.head()
            let retryable: Bool
            switch outcome {
            case .success(let head): retryable = head.status >= 500
            case .failure(let error): retryable = error.code == .connection
            }
            if !retryable || method == .post || retry >= configuration.retries {
                switch outcome {
                case .success(let head): return (transfer, head)
                case .failure(let error): throw error
                }
            }
            transfer.abandon()
            retry += 1
            do {
                try await Task.sleep(for: configuration.retryDelay(attempt: retry))
            } catch {
                throw OriginError(.cancelled, "cancelled while waiting to retry \(url.string)")
            }
        }
    }
}
