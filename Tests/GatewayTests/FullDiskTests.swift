import Foundation
@testable import Gateway
import Testing
import TestScratch

/// `swarmgate rewrite` writing to a disk that fills (the gateway's own full disks are in
/// PieceCacheTests): the output is whole or not at all.
@Suite("Full disks")
struct FullDiskTests {
    /// A gateway and a tracker whose standard error cannot be written (the log's disk is full)
    /// start and serve; they died of signal 4 at their first line (Foundation's write traps on
    /// a write error).
    @Test(arguments: ["serve", "tracker"])
    func aFullLogDiskDoesNotStopAStart(command: String) async throws {
        let port = try GatewayServer.freeLoopbackPort()
        let folder = Live.cacheFolder()
        let secret = Scratch.path("secret")
        try Data("full-log-secret".utf8).write(to: URL(fileURLWithPath: secret))
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Live.binary)
        p.arguments = command == "serve"
            ? ["serve", "--listen", "127.0.0.1:\(port)", "--cache-dir", folder]
            : ["tracker", "--listen", "127.0.0.1:\(port)", "--db", folder + "/t.sqlite", "--cache-dir", folder, "--app-secret-file", secret]
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: "/dev/full"))
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        defer { if !p.hasEnded { p.terminate() } }
        var healthy = false
        let deadline = ContinuousClock.now + .seconds(60)
        while !healthy && !p.hasEnded && ContinuousClock.now < deadline {
            healthy = (try? await HTTP.get("http://127.0.0.1:\(port)/health"))?.status == 200
            if !healthy { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(healthy, "\(command) answers /health (running: \(!p.hasEnded), status \(!p.hasEnded ? 0 : (p.endStatus ?? -1)))")
        p.terminate()
        // Waited for without holding a thread of the suite's two.
        let stopping = ContinuousClock.now + .seconds(30)
        while !p.hasEnded && ContinuousClock.now < stopping { try await Task.sleep(for: .milliseconds(50)) }
        #expect(p.hasEnded)
        guard p.hasEnded else { return }
        #expect(p.endReason == .exit && (p.endStatus ?? -1) == 0, "a clean stop: \((p.endReason?.rawValue ?? -1)) \((p.endStatus ?? -1))")
    }

    @Test(.enabled(if: Live.canMountSmallDisks)) func aRewriteOntoAFullDiskLeavesThePreviousOutputWholeAndNoTemporaryFile() async throws {
        let input = Scratch.path("sg-full", suffix: ".m3u8")
        defer { try? FileManager.default.removeItem(atPath: input) }
        // About 400 kB rewritten, onto a 64 KiB disk.
        let long = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n" + (0..<5000).map { "#EXTINF:4,\nseg\($0).ts?token=abc\n" }.joined() + "#EXT-X-ENDLIST\n"
        try Data(long.utf8).write(to: URL(fileURLWithPath: input))
        let disk = Live.cacheFolder()
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        // What the disk holds afterwards is listed from inside the namespace, before it goes.
        let script = #"""
            printf previous > "$1/out.m3u8" || exit 98
            "$2" rewrite --base-url http://h/i.m3u8 --output "$1/out.m3u8" "$3"
            echo "status=$?"; ls -A "$1"; cat "$1/out.m3u8"
            """#
        let r = try await ProgramRun.run(
            "/usr/bin/unshare", Live.onSmallDisk(size: "64k", folder: disk, ["sh", "-c", script, "sh", disk, Live.binary, input]))
        let (seen, said) = (r.out, r.err)
        #expect(r.status == 0 && !r.signalled, "the disk was set up: \(said)")
        #expect(seen == "status=1\nout.m3u8\nprevious", "exit 1, the old output whole, nothing else: \(seen)")
        #expect(said.contains(": cannot write output: No space left on device"), "\(said)")
    }
}
