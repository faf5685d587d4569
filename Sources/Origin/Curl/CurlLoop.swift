internal import CCurl
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One libcurl multi handle driven by one dedicated thread: it adds, resumes and aborts
/// transfers on command, runs curl_multi_perform, and sleeps in curl_multi_poll until a socket
/// is ready, a libcurl timer is due, or curl_multi_wakeup says a command is waiting.
///
/// Why `@unchecked Sendable` is safe: `active` is touched only by the loop thread. Other
/// threads reach the loop only through `inbox` (a Mutex) and curl_multi_wakeup, which libcurl
/// allows from any thread; the wakeup is issued while holding the inbox lock, and the loop
/// frees the multi handle only after marking the inbox closed under that same lock, so a
/// wakeup never meets a freed multi handle.
final class CurlLoop: @unchecked Sendable {
    private enum Command {
        case add(Transfer)
        case resume(Transfer)
        case abort(Transfer, OriginError)
        case stop
    }

    private struct Inbox {
        var commands: [Command] = []
        /// False once the loop has begun to stop: new commands are refused.
        var open = true
        var stopped = false
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let multi: UnsafeMutableRawPointer
    private let inbox = Mutex(Inbox())
    /// Loop thread: every transfer in the multi handle, by easy handle. Holding them here is
    /// what keeps the callbacks' unretained userdata alive (see `Transfer`).
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    private static let idleCheckInterval = Duration.milliseconds(100)

    init() {
        LibCurl.ensureInitialized()
        guard let multi = swarmgate_curl_multi_init() else { fatalError("curl_multi_init failed: out of memory") }
        self.multi = multi
        startThread()
    }

    // MARK: - Commands (any thread)

    /// Hands a transfer to the loop; false when the loop has stopped (the transfer was not taken).
    func add(_ transfer: Transfer) -> Bool { send(.add(transfer)) }

    /// Asks the loop to unpause a transfer whose consumer drained its buffer.
    func resume(_ transfer: Transfer) { _ = send(.resume(transfer)) }

    /// Asks the loop to abort a transfer; it completes with `error` if it is still running.
    func abort(_ transfer: Transfer, _ error: OriginError) { _ = send(.abort(transfer, error)) }

    /// Asks the loop to stop without waiting for it.
    func requestStop() { _ = send(.stop) }

    /// Stops the loop: running transfers fail with `.cancelled`, the thread ends, the multi
    /// handle is freed. Returns once that is done.
    func stop() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = inbox.withLock { s in
                if s.stopped { return true }
                s.stopWaiters.append(c)
                if s.open {
                    s.commands.append(.stop)
                    swarmgate_curl_multi_wakeup(multi)
                }
                return false
            }
            if done { c.resume() }
        }
    }

    private func send(_ command: Command) -> Bool {
        inbox.withLock { s in
            guard s.open else { return false }
            s.commands.append(command)
            swarmgate_curl_multi_wakeup(multi)
            return true
        }
    }

    // MARK: - The loop thread

    private func startThread() {
        // The thread owns one reference to the loop until `run` returns.
        let me = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { me in
            let loop = Unmanaged<CurlLoop>.fromOpaque(me!).takeRetainedValue()
            loop.run()
            return nil
        }, me)
        guard rc == 0 else { fatalError("pthread_create failed: \(rc)") }
        pthread_detach(thread)
    }

    private func run() {
        var lastIdleCheck = ContinuousClock.now
        var stopping = false
        while !stopping {
            let commands = inbox.withLock { s in
                defer { s.commands = [] }
                return s.commands
            }
            for command in commands {
                switch command {
                case .add(let t): start(t)
                case .resume(let t): if active[t.easy] === t { t.resumeIfRequested() }
                case .abort(let t, let error): remove(t, error)
                case .stop: stopping = true
                }
            }
            if stopping { break }

            var running: Int32 = 0
            swarmgate_curl_multi_perform(multi, &running)
            collectFinished()

            let now = ContinuousClock.now
            if now - lastIdleCheck >= Self.idleCheckInterval {
                lastIdleCheck = now
                for t in active.values {
                    if let expired = t.expiry(now: now) { remove(t, expired) }
                }
            }
            // libcurl shortens the wait to its own next timer; a wakeup ends it at once.
            swarmgate_curl_multi_poll(multi, nil, 0, active.isEmpty ? 60_000 : 100, nil)
        }
        shutDown()
    }

    private func start(_ t: Transfer) {
        let rc = swarmgate_curl_multi_add_handle(multi, t.easy)
        guard rc == CURLM_OK else {
            t.complete(OriginError(.connection, "curl_multi_add_handle: \(String(cString: swarmgate_curl_multi_strerror(rc)))"))
            return
        }
        active[t.easy] = t
        t.started()
    }

    private func remove(_ t: Transfer, _ error: OriginError) {
        guard active[t.easy] === t else { return }  // already finished
        active[t.easy] = nil
        swarmgate_curl_multi_remove_handle(multi, t.easy)
        t.complete(error)
    }

    private func collectFinished() {
        var left: Int32 = 0
        while let message = swarmgate_curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let result = message.pointee.data.result
            guard let t = active.removeValue(forKey: easy) else { continue }
            swarmgate_curl_multi_remove_handle(multi, easy)
            t.complete(result)
        }
    }

    private func shutDown() {
        let stopped = OriginError(.cancelled, "the origin client shut down")
        for t in Array(active.values) { remove(t, stopped) }
        let late = inbox.withLock { s in
            s.open = false
            defer { s.commands = [] }
            return s.commands
        }
        for case .add(let t) in late { t.complete(stopped) }
        let waiters = inbox.withLock { s in
            swarmgate_curl_multi_cleanup(multi)
            s.stopped = true
            defer { s.stopWaiters = [] }
            return s.stopWaiters
        }
        for w in waiters { w.resume() }
    }
}
