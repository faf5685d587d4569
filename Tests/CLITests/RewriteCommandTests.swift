import Foundation
import Manifest
import Testing
import TestScratch

/// `swarmgate rewrite` as SPEC section 4 describes it, through the real binary.
@Suite("swarmgate rewrite")
struct RewriteCommandTests {
    static let master = """
        #EXTM3U
        #EXT-X-DEFINE:NAME="cdn",VALUE="https://edge.example"
        #EXT-X-STREAM-INF:BANDWIDTH=800000
        low/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=1600000
        high/index.m3u8

        """
    static let media = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\nseg1.ts\n#EXT-X-ENDLIST\n"
    static let importing = "#EXTM3U\n#EXT-X-DEFINE:IMPORT=\"cdn\"\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\n{$cdn}/s.ts\n"

    func folder(_ files: [String: String]) throws -> URL {
        let root = Scratch.url("sg-cli")
        for (path, text) in files {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        return root
    }

    func allFiles(_ root: URL) -> [String] {
        (FileManager.default.enumerator(atPath: root.path)?.allObjects as? [String] ?? [])
            .filter { !$0.hasSuffix("/") && !((try? root.appendingPathComponent($0).resourceValues(forKeys: [.isDirectoryKey]).isDirectory) ?? false) }
            .sorted()
    }

    @Test func oneFileGoesToStdout() async throws {
        let dir = try folder(["index.m3u8": Self.media])
        let r = try await SwarmgateProcess.run([
            "rewrite", "--base-url", "https://cdn.example.com/v/index.m3u8?t=1", "--gateway", "http://gw:9000",
            "--xresid", "movie-1", dir.appendingPathComponent("index.m3u8").path,
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.text == "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\nhttp://gw:9000/hls.vod.p2p.com/cdn.example.com/v/seg1.ts?xresid=movie-1&xhttps=1\n#EXT-X-ENDLIST\n")
    }

    /// One file with an `--output` that is a folder goes into it under its own name, as cp
    /// does: it failed ("Is a directory").
    @Test func oneFileWithAFolderAsOutputGoesIntoIt() async throws {
        let dir = try folder(["index.m3u8": Self.media, "out/keep.txt": "x"])
        let out = dir.appendingPathComponent("out")
        let r = try await SwarmgateProcess.run([
            "rewrite", "--base-url", "https://cdn.example.com/v/index.m3u8", "--gateway", "http://gw:9000", "--xresid", "movie-1",
            "--output", out.path, dir.appendingPathComponent("index.m3u8").path,
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let written = try String(contentsOf: out.appendingPathComponent("index.m3u8"), encoding: .utf8)
        #expect(written.contains("http://gw:9000/hls.vod.p2p.com/cdn.example.com/v/seg1.ts?xresid=movie-1&xhttps=1\n"))
    }

    @Test func stdinToStdoutWithInheritedTokenAndProxiedKeys() async throws {
        let input = "#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI=\"key.bin\"\n#EXTINF:4,\ns.ts\n"
        let r = try await SwarmgateProcess.run([
            "rewrite", "--base-url", "http://cdn.example.com/v/i.m3u8?token=abc", "--inherit-query", "token",
            "--key-uris", "proxy", "--xresid", "x", "-",
        ], stdin: Data(input.utf8))
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.text.contains("URI=\"http://127.0.0.1:8080/hls.vod.p2p.com/cdn.example.com/v/key.bin?token=abc&xresid=x&xkey=1\""))
        #expect(r.text.contains("\nhttp://127.0.0.1:8080/hls.vod.p2p.com/cdn.example.com/v/s.ts?token=abc&xresid=x\n"))
    }

    @Test func aFolderIsMirroredAndMastersHandTheirXResIDAndVariablesDown() async throws {
        let dir = try folder([
            "master.m3u8": Self.master, "low/index.m3u8": Self.importing, "high/index.m3u8": Self.media,
            "notes.txt": "not a playlist", "deep/er/other.m3u": Self.media,
        ])
        let out = dir.appendingPathComponent("../\(dir.lastPathComponent)-out").standardized
        let r = try await SwarmgateProcess.run(["rewrite", "--base-url", "http://cdn.example.com/show", "--output", out.path, dir.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(allFiles(out) == ["deep/er/other.m3u", "high/index.m3u8", "low/index.m3u8", "master.m3u8"])
        let masterOut = try String(contentsOf: out.appendingPathComponent("master.m3u8"), encoding: .utf8)
        let derived = masterOut.firstMatch(of: #/xresid=([0-9a-f]{32})/#).map { String($0.1) }
        #expect(derived != nil)
        // Its variants carry its variables (`xvars`), which a gateway's media playlists import.
        let carried = try #require(PlaylistVariables.encode(["cdn": "https://edge.example"]))
        #expect(masterOut.contains("http://127.0.0.1:8080/hls.vod.p2p.com/cdn.example.com/show/low/index.m3u8?xresid=\(derived ?? "")&xvars=\(carried)\n"))
        let low = try String(contentsOf: out.appendingPathComponent("low/index.m3u8"), encoding: .utf8)
        #expect(low.contains("http://127.0.0.1:8080/hls.vod.p2p.com/edge.example/s.ts?xresid=\(derived ?? "")&xhttps=1"))
        let high = try String(contentsOf: out.appendingPathComponent("high/index.m3u8"), encoding: .utf8)
        #expect(high.contains("/cdn.example.com/show/high/seg1.ts?xresid=\(derived ?? "")\n"))
        let other = try String(contentsOf: out.appendingPathComponent("deep/er/other.m3u"), encoding: .utf8)
        #expect(!other.contains(derived ?? "-"), "a playlist no master references keeps its own derived xresid")
    }

    /// A folder's files are named in their URLs as the gateway writes paths: the xresid
    /// `rewrite` derives for `a b|c.m3u8` is the one a gateway derives for the playlist a
    /// player asks for (`a%20b|c.m3u8`), and `%`, `?`, `#` in a name are encoded.
    @Test func fileNamesInURLsAreEncodedAsTheGatewayEncodesPaths() async throws {
        let dir = try folder(["a b|c.m3u8": Self.media, "100%?#.m3u8": Self.media])
        let out = dir.appendingPathComponent("../\(dir.lastPathComponent)-out").standardized
        let r = try await SwarmgateProcess.run(["rewrite", "--base-url", "http://cdn.example.com/show/", "--output", out.path, dir.path])
        #expect(r.status == 0, "\(r.stderr)")
        let spaced = try String(contentsOf: out.appendingPathComponent("a b|c.m3u8"), encoding: .utf8)
        let gateway = try ProxyURL(requestTarget: "/hls.vod.p2p.com/cdn.example.com/show/a%20b|c.m3u8")
        #expect(spaced.contains("xresid=\(gateway.xresid.value)"), "\(spaced)")
        let odd = try String(contentsOf: out.appendingPathComponent("100%?#.m3u8"), encoding: .utf8)
        let oddGateway = try ProxyURL(requestTarget: "/hls.vod.p2p.com/cdn.example.com/show/100%25%3F%23.m3u8")
        #expect(odd.contains("xresid=\(oddGateway.xresid.value)"), "\(odd)")
    }

    /// A standard error that cannot be written (its disk is full) loses the messages, not the
    /// run: every file that can be is still rewritten, and the exit status says some failed.
    /// Foundation's write trapped at the first message (signal 4), and later files were not
    /// written.
    @Test func aStandardErrorThatCannotBeWrittenLosesOnlyTheMessages() async throws {
        let dir = try folder(["a.m3u8": "not a playlist", "b.m3u8": Self.media])
        let out = dir.appendingPathComponent("../\(dir.lastPathComponent)-out").standardized
        let r = try await SwarmgateProcess.run(
            ["rewrite", "--base-url", "http://cdn.example.com/show/", "--output", out.path, dir.path], stderrTo: "/dev/full")
        #expect(r.status == 1)
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("b.m3u8").path))
    }

    /// A run killed mid-write leaves a hidden temporary beside its output; the next run into
    /// that folder removes it, and leaves those of runs still going.
    @Test func temporariesOfKilledRunsAreRemovedAndThoseOfLiveRunsKept() async throws {
        let dir = try folder(["a.m3u8": Self.media])
        let out = dir.appendingPathComponent("../\(dir.lastPathComponent)-out").standardized
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        // A process id that ended: a child that ran and was reaped.
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilGone()
        let stale = ".a.m3u8.\(ended.processIdentifier).123.tmp", live = ".a.m3u8.\(getpid()).456.tmp"
        for name in [stale, live, ".notes.tmp"] {
            _ = FileManager.default.createFile(atPath: out.appendingPathComponent(name).path, contents: Data("part".utf8))
        }
        let r = try await SwarmgateProcess.run(["rewrite", "--base-url", "http://cdn.example.com/show/", "--output", out.path, dir.path])
        #expect(r.status == 0, "\(r.stderr)")
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: out.path))
        #expect(left == ["a.m3u8", live, ".notes.tmp"], "\(left.sorted())")
    }

    @Test func aFailedFileIsNamedWithItsLineAndTheOthersAreStillWritten() async throws {
        let dir = try folder([
            "good.m3u8": Self.media, "bad.m3u8": "#EXTM3U\n#EXTINF:4,\n{$undefined}.ts\n", "b/alone.m3u8": Self.importing,
        ])
        let out = dir.appendingPathComponent("out")
        let r = try await SwarmgateProcess.run(["rewrite", "--base-url", "http://cdn.example.com/", "--output", out.path, dir.path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("bad.m3u8: line 3: variable 'undefined' is not defined [undefinedVariable]"), "\(r.stderr)")
        #expect(r.stderr.contains("alone.m3u8: line 2: IMPORT of 'cdn'"), "\(r.stderr)")
        #expect(allFiles(out) == ["good.m3u8"], "no partial or temporary file is left for the failures")
    }

    /// A file whose name is not UTF-8 cannot be read by the name the walk gives: it fails,
    /// named, and the exit is 1 (it was skipped, and the exit 0).
    @Test func aFileWhoseNameIsNotUTF8FailsNamed() async throws {
        let dir = try folder(["ok.m3u8": Self.media])
        // "caf\xe9.m3u8": Latin-1, not UTF-8.
        let name: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".m3u8".utf8)
        let path = Array(dir.path.utf8) + [UInt8(ascii: "/")] + name + [0]
        let fd = path.withUnsafeBufferPointer { p in p.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_WRONLY, 0o644) } }
        #expect(fd >= 0)
        _ = Array(Self.media.utf8).withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        let out = dir.appendingPathComponent("out")
        let r = try await SwarmgateProcess.run(["rewrite", "--base-url", "http://cdn.example.com/", "--output", out.path, dir.path])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("caf") && r.stderr.contains(".m3u8"), "the failure is named: \(r.stderr)")
        #expect(allFiles(out) == ["ok.m3u8"])
    }

    @Test func anExistingOutputIsReplacedWholeNeverTruncated() async throws {
        let dir = try folder(["in.m3u8": "#EXTM3U\n#EXTINF:4,\n\0.ts\n", "out.m3u8": "previous"])
        let outPath = dir.appendingPathComponent("out.m3u8").path
        let r = try await SwarmgateProcess.run(["rewrite", "--base-url", "http://h/i.m3u8", "--output", outPath, dir.appendingPathComponent("in.m3u8").path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("line 3: control byte 0x0"), "\(r.stderr)")
        #expect(try String(contentsOfFile: outPath, encoding: .utf8) == "previous")
        #expect(allFiles(dir) == ["in.m3u8", "out.m3u8"])
    }

    /// A playlist whose rewrite (about 400 kB) does not fit a full stdout. (A full disk's test
    /// is in GatewayTests/FullDiskTests.swift, beside the small disks the gateway's tests mount.)
    static let long = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n" + (0..<5000).map { "#EXTINF:4,\nseg\($0).ts?token=abc\n" }.joined() + "#EXT-X-ENDLIST\n"

    @Test func aFullStdoutIsAFailureNamedAsSuch() async throws {
        let dir = try folder(["in.m3u8": Self.long])
        let r = try await ProgramRun.run(
            SwarmgateProcess.binary.path, ["rewrite", "--base-url", "http://h/i.m3u8", dir.appendingPathComponent("in.m3u8").path],
            stdout: .file("/dev/full"))
        #expect(r.status == 1 && !r.signalled)
        #expect(r.err.contains("cannot write output: No space left on device"), "\(r.err)")
    }

    @Test(arguments: [
        ["rewrite", "-"],
        ["rewrite", "--base-url", "http://h/", "--key-uris", "sideways", "-"],
        ["rewrite", "--base-url", "http://h/", "--xresid", "bad id!", "-"],
        ["rewrite", "--base-url", "not a url", "-"],
        ["rewrite", "--base-url", "http://h:99999/", "-"],
        ["rewrite", "--base-url", "http://h/", "--gateway", "http://gw:8080?x=1", "-"],
        ["rewrite", "--base-url", "http://h/", "--gateway", "http://gw:0", "-"],
        ["rewrite", "--base-url", "http://h/"],
        ["rewrite", "--base-url", "http://h/", "--no-such-flag", "-"],
        ["frobnicate"],
    ])
    func usageErrorsExitTwo(arguments: [String]) async throws {
        let r = try await SwarmgateProcess.run(arguments, stdin: Data("#EXTM3U\n".utf8))
        #expect(r.status == 2, "\(r.stderr)")
        #expect(!r.stderr.isEmpty)
    }

    @Test func aFolderWithoutOutputIsAUsageError() async throws {
        let dir = try folder(["a.m3u8": Self.media])
        let r = try await SwarmgateProcess.run(["rewrite", "--base-url", "http://h/", dir.path])
        #expect(r.status == 2)
        #expect(r.stderr.contains("--output is required"))
    }

    @Test func aMissingInputIsAFailureNotAUsageError() async throws {
        let dir = try folder(["a.m3u8": Self.media])
        let r = try await SwarmgateProcess.run(["rewrite", "--base-url", "http://h/", "--output", dir.appendingPathComponent("o").path,
            dir.appendingPathComponent("a.m3u8").path, "/nonexistent/b.m3u8"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("/nonexistent/b.m3u8: no such file or folder"))
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("o/a.m3u8").path))
    }

    /// One INPUT that is not there is that failure, not a call for --output; two INPUTs that
    /// would be written to one output file (a file and a folder's of the same name) are
    /// refused before anything is written (the first was silently lost).
    @Test func aLoneMissingInputAndTwoInputsForOneOutputAreNamed() async throws {
        let lone = try await SwarmgateProcess.run(["rewrite", "--base-url", "http://h/", "/nonexistent/alone.m3u8"])
        #expect(lone.status == 1 && lone.stderr.contains("/nonexistent/alone.m3u8: no such file or folder"), "\(lone.status) \(lone.stderr)")
        let dir = try folder(["a.m3u8": Self.media, "sub/a.m3u8": Self.media])
        let out = dir.appendingPathComponent("o").path
        let both = try await SwarmgateProcess.run(["rewrite", "--base-url", "http://h/", "--output", out,
            dir.appendingPathComponent("a.m3u8").path, dir.appendingPathComponent("sub").path])
        #expect(both.status == 2 && both.stderr.contains("would both be written to"), "\(both.status) \(both.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out + "/a.m3u8"))
    }

    @Test func helpExitsZero() async throws {
        let r = try await SwarmgateProcess.run(["rewrite", "--help"])
        #expect(r.status == 0)
        #expect(r.text.contains("--base-url"))
    }
}
