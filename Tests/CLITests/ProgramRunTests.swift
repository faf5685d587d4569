import Foundation
import Testing
import TestScratch

#if canImport(Glibc)
    import Glibc
#endif

/// The tests' way of running a program to its end (Tests/TestScratch/ProgramRun.swift): it
/// ends with the program, whoever else holds its output, and a program that does not end is
/// killed with its children.
@Suite("Programs the tests run")
struct ProgramRunTests {
    /// Whether `pid` is still a live process (a zombie waiting for its parent is not).
    static func alive(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        let state = stat[stat.index(after: close)...].split(separator: " ").first
        return state != "Z" && state != "X"
    }

    /// A child that leaves a process of its own holding its stdout (as a sibling that
    /// inherited the pipe did in CI): the run returns at the child's end, with what it wrote,
    /// while that process still runs. Reading a pipe to its end would wait for the holder.
    @Test func theRunEndsWithTheProgramWhileAnotherHoldsItsOutput() async throws {
        let r = try await ProgramRun.run("/bin/sh", ["-c", "sleep 120 & echo $!; echo said >&2"], stdin: Data("in".utf8))
        let holder = try #require(pid_t(r.out.trimmingCharacters(in: .whitespacesAndNewlines)), "\(r.out)")
        defer { kill(holder, SIGKILL) }
        #expect(r.status == 0 && !r.signalled)
        #expect(r.err == "said\n")
        #expect(Self.alive(holder), "the process holding the child's stdout still runs")
    }

    /// What the child reads is the `stdin` given, then its end; what it writes comes back whole.
    @Test func stdinIsReadToItsEndAndTheOutputComesBackWhole() async throws {
        let text = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let r = try await ProgramRun.run("/bin/cat", [], stdin: text)
        #expect(r.status == 0)
        #expect(r.stdout == text)
        let none = try await ProgramRun.run("/bin/cat", [])
        #expect(none.status == 0 && none.stdout.isEmpty, "no stdin is an empty one")
    }

    /// A program still running at its timeout is killed with the processes it started, and
    /// the run throws, naming it with what it said.
    @Test func aProgramPastItsTimeoutIsKilledWithItsChildren() async throws {
        let pidFile = Scratch.path("holder")
        do {
            _ = try await ProgramRun.run("/bin/sh", ["-c", "sleep 120 & echo $! > \"$0\"; echo waiting >&2; wait", pidFile], timeout: .seconds(5))
            Issue.record("the run returned")
        } catch let e as ProgramTimedOut {
            #expect(e.stderr == "waiting\n")
            #expect(e.description.contains("/bin/sh -c"))
        }
        let holder = try #require(pid_t(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        // Killed with its group; whoever adopted it may take a moment to reap it.
        let deadline = ContinuousClock.now + .seconds(10)
        while Self.alive(holder) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(!Self.alive(holder), "the child's own child was killed")
    }

    @Test func anExitStatusAndASignalAreToldApart() async throws {
        let exited = try await ProgramRun.run("/bin/sh", ["-c", "exit 3"])
        #expect(exited.status == 3 && !exited.signalled)
        let killed = try await ProgramRun.run("/bin/sh", ["-c", "kill -9 $$"])
        #expect(killed.status == 9 && killed.signalled)
    }
}
