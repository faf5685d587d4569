import Foundation

/// Waiting for a child process without `Process.waitUntilExit()`. On Linux, Foundation learns
/// that a child ended when a socket the child inherited closes; a sibling started at the same
/// moment can inherit that socket too (swift-corelibs-foundation issue 4795), and then the
/// ended child stays a zombie that Foundation calls running: `waitUntilExit()` spins for ever.
/// It did, in a full test run: both of the suite's cooperative threads stuck in it, stopping
/// origins whose processes had long exited. The kernel's word is read here instead.
extension Process {
    /// Whether the child has ended: by Foundation's word, or the kernel's (a zombie, or gone).
    public var hasEnded: Bool {
        if !isRunning { return true }
        guard let state = Self.kernelState(processIdentifier) else { return true }
        return state.state == "Z" || state.state == "X"
    }

    /// The exit status once the child has ended, as `terminationStatus` gives it (the code it
    /// exited with, or the signal that ended it); nil while it runs.
    public var endStatus: Int32? {
        if !isRunning { return terminationStatus }
        guard let state = Self.kernelState(processIdentifier) else { return reapedByFoundation() ? terminationStatus : nil }
        guard state.state == "Z" || state.state == "X", let status = state.exitCode else { return nil }
        // waitpid(2)'s form: a signal in the low 7 bits, else the exit code above them.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    }

    /// How the child ended, as `terminationReason` gives it; nil while it runs.
    public var endReason: TerminationReason? {
        if !isRunning { return terminationReason }
        guard let state = Self.kernelState(processIdentifier) else { return reapedByFoundation() ? terminationReason : nil }
        guard state.state == "Z" || state.state == "X", let status = state.exitCode else { return nil }
        return status & 0x7f == 0 ? .exit : .uncaughtSignal
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

    /// Foundation reaped the child (the kernel has no such process): it says so in a moment.
    private func reapedByFoundation() -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.001) }
        return !isRunning
    }

    /// The state letter and exit code (field 52, Linux 3.5 and later) of `/proc/PID/stat`;
    /// nil when there is no such process.
    static func kernelState(_ pid: Int32) -> (state: Character, exitCode: Int32?)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // The command name, in parentheses, may hold spaces: fields count from after it.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard let state = fields.first?.first else { return nil }
        return (state, fields.count > 49 ? Int32(fields[49].trimmingCharacters(in: .whitespacesAndNewlines)) : nil)
    }
}
