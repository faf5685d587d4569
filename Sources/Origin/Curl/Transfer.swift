internal import CCurl
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The head of one HTTP answer: the status and the header fields in the order received.
struct ResponseHead: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]

    /// The first value of a header field, by case-insensitive name.
    func value(of name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }
}

/// One HTTP exchange on one libcurl easy handle, and the bounded buffer between libcurl's write
/// callback (on the loop thread) and the body's consumer (any task).
///
/// Ownership of the callbacks' userdata: libcurl gets `Unmanaged.passUnretained(self)` as
/// WRITEDATA, HEADERDATA and OPENSOCKETDATA, so it owns no reference. libcurl calls back only
/// from curl_multi_perform / curl_easy_pause on the loop thread, while the easy handle is in
/// the multi handle; for all that time the loop's `active` table holds this transfer strongly,
/// and `complete` frees the easy handle (after curl_multi_remove_handle) before the loop lets
/// go of it. No callback can run on a freed transfer, and nothing is left retained.
///
/// Why `@unchecked Sendable` is safe: the easy handle, the header list, the error buffer and
/// every property marked "loop thread" are used by the creating task until it hands the
/// transfer to the loop (through the loop's Mutex, which orders those accesses), and from then
/// on only on the loop thread. Everything the consumer touches is in `shared`, a Mutex.
final class Transfer: @unchecked Sendable {
    let options: TransferOptions
    private let loop: CurlLoop
    private let limiter: HostLimiter
    let easy: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))

    // Loop thread.
    private var lastActivity = ContinuousClock.now
    private var received: Int64 = 0
    /// Bytes of header lines received for this answer (interim ones included).
    private var headerBytes = 0
    /// The most header bytes an answer may have: past it the transfer ends `.tooLarge`, not
    /// retried (libcurl's own limit failed it as a connection error, asked three times).
    static let maxHeaderBytes = 256 << 10
    private var headerLines: [(name: String, value: String)] = []
    private var headSent = false
    private var completed = false
    /// Why the open-socket callback refused an address: the transfer fails `.forbiddenAddress`.
    private var refusal: String?
    /// A failure found by a callback (body too large), reported instead of libcurl's code.
    private var callbackFailure: OriginError?

    private struct Shared {
        var head: Result<ResponseHead, OriginError>?
        var headWaiter: CheckedContinuation<Result<ResponseHead, OriginError>, Never>?
        var chunks: [[UInt8]] = []
        var buffered = 0
        var highWater = 0
        /// The write callback answered CURL_WRITEFUNC_PAUSE: libcurl keeps that chunk and
        /// reads no more until the loop calls swarmgate_curl_easy_pause(CONT).
        var paused = false
        /// The consumer drained the buffer and asked the loop to resume.
        var resumeRequested = false
        var end: Result<Void, OriginError>?
        var bodyWaiter: CheckedContinuation<Result<[UInt8]?, OriginError>, Never>?
        /// The consumer is gone (cancelled, dropped the body, or the fetch moved on).
        var abandoned = false

        /// When the buffer has drained to half while libcurl is paused, marks a resume as asked
        /// for and returns true: the caller then sends the loop a resume command.
        mutating func askToResume(bufferSize: Int) -> Bool {
            guard paused, !resumeRequested, !abandoned, buffered <= bufferSize / 2 else { return false }
            resumeRequested = true
            return true
        }
    }
    private let shared = Mutex(Shared())

    /// Creates and configures the easy handle. The caller holds a host permit for
    /// `options.url.hostKey`, which the transfer gives back once libcurl is done with it.
    init(_ options: TransferOptions, loop: CurlLoop, limiter: HostLimiter) throws(OriginError) {
        guard let easy = swarmgate_curl_easy_init() else {
            limiter.release(options.url.hostKey)
            throw OriginError(.connection, "curl_easy_init failed")
        }
        self.options = options
        self.loop = loop
        self.limiter = limiter
        self.easy = easy
        errorBuffer[0] = 0
        if let failure = configure() {
            complete(failure)
            throw failure
        }
    }

    deinit {
        errorBuffer.deallocate()
    }

    // MARK: - The consumer's side

    /// Waits for the response head (or the failure that came before it).
    func head() async -> Result<ResponseHead, OriginError> {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Result<ResponseHead, OriginError>, Never>) in
                let ready: Result<ResponseHead, OriginError>? = shared.withLock { s in
                    if let head = s.head { return head }
                    if s.abandoned || Task.isCancelled { return .failure(Self.cancelled) }
                    s.headWaiter = c
                    return nil
                }
                if let ready { c.resume(returning: ready) }
            }
        } onCancel: {
            abandon()
        }
    }

    /// The next body chunk; nil at the end of a complete body.
    func nextChunk() async -> Result<[UInt8]?, OriginError> {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Result<[UInt8]?, OriginError>, Never>) in
                var wake = false
                let ready: Result<[UInt8]?, OriginError>? = shared.withLock { s in
                    defer { wake = s.askToResume(bufferSize: options.bufferSize) }
                    if s.abandoned || Task.isCancelled { return .failure(Self.cancelled) }
                    if !s.chunks.isEmpty {
                        let chunk = s.chunks.removeFirst()
                        s.buffered -= chunk.count
                        return .success(chunk)
                    }
                    switch s.end {
                    case .success: return .success(nil)
                    case .failure(let e): return .failure(e)
                    case nil: break
                    }
                    if s.bodyWaiter != nil {
                        return .failure(OriginError(.cancelled, "a body is read by one iterator at a time"))
                    }
                    s.bodyWaiter = c
                    return nil
                }
                if wake { loop.resume(self) }
                if let ready { c.resume(returning: ready) }
            }
        } onCancel: {
            abandon()
        }
    }

    /// The consumer is gone: wakes its waiters with `.cancelled`, drops the buffer and has the
    /// loop abort the transfer if it still runs.
    func abandon() {
        typealias HeadWaiter = CheckedContinuation<Result<ResponseHead, OriginError>, Never>
        typealias BodyWaiter = CheckedContinuation<Result<[UInt8]?, OriginError>, Never>
        let (headWaiter, bodyWaiter, running) = shared.withLock { s -> (HeadWaiter?, BodyWaiter?, Bool) in
            if s.abandoned { return (nil, nil, false) }
            s.abandoned = true
            s.chunks = []
            s.buffered = 0
            defer { (s.headWaiter, s.bodyWaiter) = (nil, nil) }
            return (s.headWaiter, s.bodyWaiter, s.end == nil)
        }
        headWaiter?.resume(returning: .failure(Self.cancelled))
        bodyWaiter?.resume(returning: .failure(Self.cancelled))
        if running { loop.abort(self, Self.cancelled) }
    }

    /// The most body bytes that were ever buffered at once (a test hook for backpressure).
    var bufferHighWater: Int { shared.withLock { $0.highWater } }

    static let cancelled = OriginError(.cancelled, "the fetch was cancelled or its body dropped")

    // MARK: - The loop's side (loop thread)

    /// The transfer was added to the multi handle: the idle clock starts.
    func started() {
        lastActivity = .now
    }

    /// Why the transfer ends now, if it does: no byte came for the idle timeout while it was
    /// not paused, or its consumer left it paused for `pausedLimit` (took too little to
    /// drain its buffer to half).
    func expiry(now: ContinuousClock.Instant) -> OriginError? {
        let paused = shared.withLock { $0.paused }
        guard now - lastActivity > (paused ? options.pausedLimit : options.idleTimeout) else { return nil }
        let host = options.url.hostKey
        return paused
            ? OriginError(.timeout, "\(host): its reader left it paused (its buffer full) for \(options.pausedLimit)")
            : OriginError(.timeout, "\(host): no data for \(options.idleTimeout)")
    }

    /// Unpauses libcurl if the consumer asked. libcurl may call the write callback from
    /// inside curl_easy_pause, which may pause again: the flags are cleared first.
    func resumeIfRequested() {
        let resume = shared.withLock { s in
            guard s.paused && s.resumeRequested else { return false }
            s.paused = false
            s.resumeRequested = false
            return true
        }
        guard resume else { return }
        lastActivity = .now
        swarmgate_curl_easy_pause(easy, swarmgate_curlpause_cont)
    }

    /// Ends the transfer exactly once: frees the easy handle (already out of the multi handle),
    /// gives the host permit back and tells the consumer. `error` nil: libcurl finished cleanly.
    func complete(_ error: OriginError?) {
        guard !completed else { return }
        completed = true
        let head = headSent || error != nil ? nil : ResponseHead(status: responseCode(), headers: headerLines)
        swarmgate_curl_easy_cleanup(easy)
        swarmgate_curl_slist_free_all(headerList)
        headerList = nil
        limiter.release(options.url.hostKey)
        let (headWaiter, headResult, bodyWaiter) = shared.withLock { s in
            if s.head == nil { s.head = head.map { .success($0) } ?? .failure(error ?? Self.cancelled) }
            s.end = error.map { .failure($0) } ?? .success(())
            defer { (s.headWaiter, s.bodyWaiter) = (nil, nil) }
            return (s.headWaiter, s.head, s.bodyWaiter)
        }
        if let headWaiter, let headResult { headWaiter.resume(returning: headResult) }
        bodyWaiter?.resume(returning: error.map { .failure($0) } ?? .success(nil))
    }

    /// Ends the transfer with libcurl's result code.
    func complete(_ code: CURLcode) {
        complete(code == CURLE_OK ? nil : error(for: code))
    }

    private func error(for code: CURLcode) -> OriginError {
        let host = options.url.hostKey
        if let refusal { return OriginError(.forbiddenAddress, "refused to connect to \(host): \(refusal)") }
        if let callbackFailure { return callbackFailure }
        let detail = errorBuffer[0] != 0 ? String(cString: errorBuffer) : String(cString: swarmgate_curl_easy_strerror(code))
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return OriginError(.timeout, "\(host): \(detail)")
        case CURLE_FILESIZE_EXCEEDED:
            return OriginError(.tooLarge, "\(host): body larger than \(options.maxBodySize ?? 0) bytes")
        case CURLE_URL_MALFORMAT:
            return OriginError(.invalidURL, "\(options.url.string): \(detail)")
        case CURLE_UNSUPPORTED_PROTOCOL:
            // The URL's scheme was checked (http or https) before it reached curl: what it did
            // not support is the answer, one that is not HTTP ("HTTP/0.9", such as the stray
            // body of an earlier 204 on a reused connection). A connection error, asked again.
            return OriginError(.connection, "\(host): the answer is not HTTP: \(detail)")
        default:
            return OriginError(.connection, "\(host): \(detail)")
        }
    }

    private func responseCode() -> Int {
        var code = 0
        _ = swarmgate_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &code)
        return code
    }

    /// A header line from libcurl (status lines, fields, the blank line that ends a block).
    fileprivate func receiveHeader(_ bytes: UnsafeRawBufferPointer) -> Int {
        lastActivity = .now
        guard !headSent else { return bytes.count }  // trailers
        headerBytes += bytes.count
        guard headerBytes <= Self.maxHeaderBytes else {
            callbackFailure = OriginError(.tooLarge, "\(options.url.hostKey): response headers larger than \(Self.maxHeaderBytes) bytes")
            return 0
        }
        var end = bytes.endIndex
        while end > bytes.startIndex, bytes[end - 1] == 0x0A || bytes[end - 1] == 0x0D { end -= 1 }
        let line = Substring(String(decoding: bytes[..<end], as: UTF8.self))
        if line.isEmpty {
            let status = responseCode()
            if (100..<200).contains(status) {
                headerLines = []  // an interim answer; the real one follows
                return bytes.count
            }
            headSent = true
            let head = ResponseHead(status: status, headers: headerLines)
            let waiter = shared.withLock { s in
                s.head = .success(head)
                defer { s.headWaiter = nil }
                return s.headWaiter
            }
            waiter?.resume(returning: .success(head))
        } else if line.hasPrefix("HTTP/") {
            headerLines = []
        } else if line.first == " " || line.first == "\t", let last = headerLines.popLast() {
            headerLines.append((last.name, last.value + " " + line.trimmingSpaces()))
        } else if let colon = line.firstIndex(of: ":") {
            headerLines.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingSpaces()))
        }
        return bytes.count
    }

    /// Body bytes from libcurl: handed to a waiting consumer, buffered, or refused with
    /// CURL_WRITEFUNC_PAUSE when the buffer is full.
    fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        lastActivity = .now
        if let max = options.maxBodySize, received + Int64(bytes.count) > max {
            callbackFailure = OriginError(.tooLarge, "\(options.url.hostKey): body larger than \(max) bytes")
            return 0
        }
        enum Outcome { case abort, pause, stored, handOff(CheckedContinuation<Result<[UInt8]?, OriginError>, Never>) }
        let size = options.bufferSize
        let outcome: Outcome = shared.withLock { s in
            if s.abandoned { return .abort }
            if let waiter = s.bodyWaiter {
                s.bodyWaiter = nil
                return .handOff(waiter)
            }
            if s.buffered >= size {
                s.paused = true
                return .pause
            }
            s.chunks.append(Array(bytes))
            s.buffered += bytes.count
            s.highWater = max(s.highWater, s.buffered)
            return .stored
        }
        switch outcome {
        case .abort: return 0
        case .pause: return swarmgate_curl_writefunc_pause
        case .stored: break
        case .handOff(let waiter): waiter.resume(returning: .success(Array(bytes)))
        }
        received += Int64(bytes.count)
        return bytes.count
    }

    /// The open-socket callback: the address policy's check on the address about to be
    /// connected to. A refusal returns no socket, so no packet is sent to that address.
    fileprivate func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        var ip = [UInt8](repeating: 0, count: 16)
        let length = Int(swarmgate_curl_sockaddr_ip(address, &ip))
        if let reason = options.policy.refusal(address: Array(ip.prefix(length))) {
            refusal = length == 0 ? reason : "\(Self.text(ip.prefix(length))) is \(reason)"
            return swarmgate_curl_socket_bad
        }
        let a = address.pointee
        return socket(a.family, a.socktype | Int32(SOCK_CLOEXEC.rawValue), a.protocol)
    }

    private static func text(_ ip: ArraySlice<UInt8>) -> String {
        if ip.count == 4 { return ip.map(String.init).joined(separator: ".") }
        var groups: [String] = []
        var i = ip.startIndex
        while i < ip.endIndex {
            groups.append(String(UInt16(ip[i]) << 8 | UInt16(ip[i + 1]), radix: 16))
            i += 2
        }
        return "[" + groups.joined(separator: ":") + "]"
    }

    // MARK: - Setting up the easy handle

    /// Sets every option; returns the failure if libcurl refuses one.
    private func configure() -> OriginError? {
        let o = options
        var failed: CURLoption?
        func set(_ option: CURLoption, _ value: Int) {
            if swarmgate_curl_setopt_long(easy, option, value) != CURLE_OK { failed = failed ?? option }
        }
        func set(_ option: CURLoption, _ value: String) {
            if swarmgate_curl_setopt_string(easy, option, value) != CURLE_OK { failed = failed ?? option }
        }
        func milliseconds(_ d: Duration) -> Int {
            let (s, atto) = d.components
            return max(1, Int(s) * 1000 + Int(atto / 1_000_000_000_000_000))
        }
        set(CURLOPT_URL, o.url.string)
        set(CURLOPT_PROTOCOLS_STR, "http,https")
        set(CURLOPT_PROXY, "")  // never a proxy from the environment: it would defeat the address check
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_FOLLOWLOCATION, 0)  // redirects are followed by OriginClient, each hop checked
        switch o.method {
        case .get: set(CURLOPT_HTTPGET, 1)
        case .head: set(CURLOPT_NOBODY, 1)
        case .post:
            // libcurl copies the body (COPYPOSTFIELDS, after its size): nothing to keep alive.
            if swarmgate_curl_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(o.body.count)) != CURLE_OK { failed = failed ?? CURLOPT_POSTFIELDSIZE_LARGE }
            let copied =
                o.body.isEmpty
                ? swarmgate_curl_setopt_string(easy, CURLOPT_COPYPOSTFIELDS, "")
                : o.body.withUnsafeBytes { swarmgate_curl_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0.baseAddress!)) }
            if copied != CURLE_OK { failed = failed ?? CURLOPT_COPYPOSTFIELDS }
        }
        if let range = o.range { set(CURLOPT_RANGE, range.description) }
        set(CURLOPT_USERAGENT, o.userAgent)
        set(CURLOPT_CONNECTTIMEOUT_MS, milliseconds(o.connectTimeout))
        if let total = o.totalTimeout { set(CURLOPT_TIMEOUT_MS, milliseconds(total)) }
        if let max = o.maxBodySize {
            if swarmgate_curl_setopt_off(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(max)) != CURLE_OK { failed = failed ?? CURLOPT_MAXFILESIZE_LARGE }
        }
        set(CURLOPT_HTTP_VERSION, o.httpVersion == .http1_1 ? CURL_HTTP_VERSION_1_1 : CURL_HTTP_VERSION_2TLS)
        set(CURLOPT_SSL_VERIFYPEER, 1)
        set(CURLOPT_SSL_VERIFYHOST, 2)
        if let caFile = o.caFile { set(CURLOPT_CAINFO, caFile) }
        set(CURLOPT_TCP_KEEPALIVE, 1)
        _ = swarmgate_curl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)

        for (name, value) in o.headers {
            // Checked byte by byte: "\r\n" is one Character, equal to neither "\r" nor "\n".
            guard !name.isEmpty, !name.utf8.contains(UInt8(ascii: ":")),
                !"\(name)\(value)".utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 })
            else {
                return OriginError(.invalidRequest, "request header \(name.debugDescription) is not a valid field")
            }
            headerList = swarmgate_curl_slist_append(headerList, "\(name): \(value)")
        }
        // The bytes as the origin holds them: without an Accept-Encoding an origin may send any
        // coding (RFC 9110 12.5.3), and a gzip key or segment was relayed without saying so.
        if !o.headers.contains(where: { $0.name.lowercased() == "accept-encoding" }) {
            headerList = swarmgate_curl_slist_append(headerList, "Accept-Encoding: identity")
        }
        // libcurl would call a POST body a form unless told otherwise: no type, unless given.
        if o.method == .post && !o.headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            headerList = swarmgate_curl_slist_append(headerList, "Content-Type:")
        }
        if let headerList { _ = swarmgate_curl_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList) }

        let me = Unmanaged.passUnretained(self).toOpaque()
        _ = swarmgate_curl_setopt_pointer(easy, CURLOPT_WRITEDATA, me)
        _ = swarmgate_curl_setopt_pointer(easy, CURLOPT_HEADERDATA, me)
        _ = swarmgate_curl_setopt_pointer(easy, CURLOPT_OPENSOCKETDATA, me)
        _ = swarmgate_curl_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, me in
            guard let me else { return 0 }
            let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
            return Unmanaged<Transfer>.fromOpaque(me).takeUnretainedValue().receiveBody(bytes)
        }
        _ = swarmgate_curl_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, me in
            guard let me else { return 0 }
            let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
            return Unmanaged<Transfer>.fromOpaque(me).takeUnretainedValue().receiveHeader(bytes)
        }
        if swarmgate_curl_setopt_opensocket_callback(easy, { me, _, address in
            guard let me, let address else { return swarmgate_curl_socket_bad }
            return Unmanaged<Transfer>.fromOpaque(me).takeUnretainedValue().openSocket(address)
        }) != CURLE_OK {
            failed = failed ?? CURLOPT_OPENSOCKETFUNCTION
        }
        guard let failed else { return nil }
        return OriginError(.connection, "libcurl refused option \(failed.rawValue)")
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
