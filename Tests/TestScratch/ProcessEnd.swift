import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Waiting for a child process without `Process.waitUntilExit()`. On Linux, Foundation learns
/// that a child ended when a socket the child inherited closes; a sibling started at the same
/// moment can inherit that socket too (swift-corelibs-foundation issue 4795), and then the
/// ended child stays a zombie that Foundation calls running: `waitUntilExit()` spins for ever.
/// It did, in a full test run: both of the suite's cooperative threads stuck in it, stopping
/// origins whose processes had long exited. The kernel's word is read here instead.
extension Process {
    /// What the kernel says of a child Foundation still calls running.
    enum KernelState {
        /// No such process: Foundation reaped it, and says so in a moment.
        case reaped
        /// A zombie, with waitpid(2)'s status.
        case ended(status: Int32)
        /// Running (or `/proc` could not be read: not taken for an end).
        case running
    }

    /// Whether the child has ended: by Foundation's word, or the kernel's.
    public var hasEnded: Bool {
        if !isRunning { return true }
        switch kernelState {
        case .reaped, .ended: return true
        case .running: return false
        }
    }

    /// The exit status once the child has ended, as `terminationStatus` gives it (the code it
    /// exited with, or the signal that ended it); nil while it runs.
    public var endStatus: Int32? {
        if !isRunning { return terminationStatus }
        switch kernelState {
        case .reaped: return reapedByFoundation() ? terminationStatus : nil
        case .ended(let status): return status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
        case .running: return nil
        }
    }

    /// How the child ended, as `terminationReason` gives it; nil while it runs.
    public var endReason: TerminationReason? {
        if !isRunning { return terminationReason }
        switch kernelState {
        case .reaped: return reapedByFoundation() ? terminationReason : nil
        case .ended(let status): return status & 0x7f == 0 ? .exit : .uncaughtSignal
        case .running: return nil
        }
    }

    /// Waits for the end, polling, for at most `timeout`; whether it ended. Blocks the calling
    /// thread (no run loop).
    @discardableResult
    public func waitForEnd(timeout: Duration = .seconds(600)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !hasEnded {
            guard ContinuousClock.now < deadline else { return false }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return true
    }

    /// Waits until the child's process id is free (`kill(pid, 0)` says no such process), for
    /// a test that needs the id of a process that no longer exists: a zombie still has it.
    /// One Foundation does not reap within a second (issue 4795) is reaped here. 10 s at most
    /// (the id taken by a process of another user answers EPERM, never ESRCH).
    public func waitUntilGone() {
        waitForEnd()
        let reapBy = ContinuousClock.now + .seconds(1), deadline = reapBy + .seconds(9)
        while (kill(processIdentifier, 0) == 0 || errno != ESRCH) && ContinuousClock.now < deadline {
            if ContinuousClock.now >= reapBy { _ = waitpid(processIdentifier, nil, WNOHANG) }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    /// Foundation reaped the child (the kernel has no such process): it says so in a moment.
    private func reapedByFoundation() -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.001) }
        return !isRunning
    }

    /// `/proc/PID/stat`'s state letter and exit code (field 52, Linux 3.5 and later).
    var kernelState: KernelState {
        let path = "/proc/\(processIdentifier)/stat"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            return access("/proc/\(processIdentifier)", F_OK) != 0 && errno == ENOENT ? .reaped : .running
        }
        // The command name, in parentheses, may hold spaces: fields count from after it.
        guard let close = text.lastIndex(of: ")") else { return .running }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard let state = fields.first?.first, state == "Z" || state == "X" else { return .running }
        guard fields.count > 49, let status = Int32(fields[49].trimmingCharacters(in: .whitespacesAndNewlines)) else { return .running }
        return .ended(status: status)
    }
}
