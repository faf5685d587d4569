import Foundation
import Testing
import TestScratch

/// A real player (ffmpeg, as users have it) plays every sample through the gateway, from an
/// origin that demands a token on every request; every decoded frame (`-f framemd5`) must equal
/// playing the files directly.
@Suite("ffmpeg plays through the gateway", .serialized, .enabled(if: Players.ffmpeg != nil))
final class PlayerTests {
    static let token = "play%2Dtoken"
    let origin: LiveProcess
    let originPort: Int

    init() async throws {
        (origin, originPort) = try await Live.origin(serving: Live.packageRoot.appendingPathComponent("samples"), token: Self.token)
    }

    deinit { origin.stop() }

    @Test(arguments: [
        ("hls-ts/master.m3u8", "origin"), ("hls-fmp4/index.m3u8", "origin"), ("hls-byterange/index.m3u8", "origin"),
        ("hls-aes/index.m3u8", "origin"), ("hls-aes/index.m3u8", "proxy"), ("dash/manifest.mpd", "origin"),
    ])
    func framesAreIdentical(sample: String, keyURIs: String) async throws {
        let (gateway, port) = try await Live.gateway([
            "--allow-origin", "127.0.0.1:\(originPort)", "--inherit-query", "token", "--key-uris", keyURIs,
        ])
        defer { gateway.stop() }
        let proxied = "http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)/\(sample)?token=\(Self.token)"
        let direct = Live.packageRoot.appendingPathComponent("samples/\(sample)").path
        let viaGateway = try await Players.framemd5(proxied)
        let fromFiles = try await Players.framemd5(direct)
        #expect(viaGateway.count > 100, "ffmpeg decoded frames")
        #expect(viaGateway == fromFiles)
    }

    /// A real player plays a disguised stream (the samples' master at `master.jpg`, its media
    /// playlists at `low-list.ts` and `high-list.ts`) through the gateway, frame for frame as
    /// the files: ffmpeg asks each playlist for `bytes=0-`, and follows the variants'
    /// rewritten URLs with their token.
    /// Here, where players run one at a time: in a suite of its own, two ffmpeg decodes at
    /// once beside the swarm suites went with the four-node test's origin count failing in two
    /// full runs of three (its preparations preempted and fetched again under load).
    @Test func ffmpegPlaysADisguisedStream() async throws {
        let samples = Live.packageRoot.appendingPathComponent("samples/hls-ts")
        let folder = Scratch.url("disguised-player")
        let show = folder.appendingPathComponent("show")
        try FileManager.default.createDirectory(at: show, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: samples.path) where name.hasSuffix(".ts") {
            try FileManager.default.copyItem(at: samples.appendingPathComponent(name), to: show.appendingPathComponent(name))
        }
        for variant in ["low", "high"] {
            try FileManager.default.copyItem(
                at: samples.appendingPathComponent("\(variant).m3u8"), to: show.appendingPathComponent("\(variant)-list.ts"))
        }
        let master = try String(contentsOf: samples.appendingPathComponent("master.m3u8"), encoding: .utf8)
            .replacingOccurrences(of: ".m3u8", with: "-list.ts")
        try Data(master.utf8).write(to: show.appendingPathComponent("master.jpg"))

        let (origin, originPort) = try await Live.origin(serving: folder, token: Self.token)
        defer { origin.stop() }
        let (gateway, port) = try await Live.gateway(["--allow-origin", "127.0.0.1:\(originPort)", "--inherit-query", "token"])
        defer { gateway.stop() }
        let proxied = "http://127.0.0.1:\(port)/hls.vod.p2p.com/127.0.0.1:\(originPort)/show/master.jpg?token=\(Self.token)"
        let viaGateway = try await Players.framemd5(proxied)
        let fromFiles = try await Players.framemd5(samples.appendingPathComponent("master.m3u8").path)
        #expect(viaGateway.count > 100, "ffmpeg decoded frames")
        #expect(viaGateway == fromFiles)
    }

    /// `serve --demo` serves the samples as live streams too (below `/live/`): each media
    /// playlist loops its segments by the clock, six at a time, moving on a segment every
    /// 2 s, with a discontinuity where the loop starts again. ffmpeg plays it through the
    /// gateway as a live stream, and every video frame it decodes is a frame of the samples
    /// (an audio decoder that joins mid-stream decodes its first frame without the one before).
    @Test func theDemosLiveStreamPlaysAndMovesOn() async throws {
        let (gateway, _) = try await Live.gateway(["--demo"], environment: ["SWARMGATE_SAMPLES": Live.packageRoot.appendingPathComponent("samples").path])
        defer { gateway.stop() }
        let master = try await gateway.waitForStderr(#/(http://\S+/live/hls-ts/master\.m3u8)/#)
        let variant = master.replacing("master.m3u8", with: "low.m3u8")
        func sequence() async throws -> (Int, String) {
            let r = try await HTTP.get(variant)
            #expect(r.status == 200)
            let n = Int(try #require(r.text.firstMatch(of: #/#EXT-X-MEDIA-SEQUENCE:(\d+)/#)).1)!
            return (n, r.text)
        }
        let (first, text) = try await sequence()
        #expect(!text.contains("#EXT-X-ENDLIST") && !text.contains("PLAYLIST-TYPE"))
        #expect(text.split(separator: "\n").filter { $0.hasPrefix("#EXTINF") }.count == 6)
        #expect(text.split(separator: "\n").filter { !$0.hasPrefix("#") }.allSatisfy { $0.contains("/hls.vod.p2p.com/") })
        try await Task.sleep(for: .milliseconds(2100))
        let later = try await sequence().0
        #expect(later == first + 1 || later == first + 2, "2.1 s later: one or two 2 s segments on (\(first) → \(later))")

        // 40 frames of each variant (1.6 s at 25 fps, within one segment): a count, not a
        // time, as the loop's timestamps go back where it starts again.
        let live = try await Players.framemd5(master, streams: "0:v", frames: 40)
        let samples = Live.packageRoot.appendingPathComponent("samples/hls-ts/master.m3u8").path
        let vod = await Set(try Players.framemd5(samples, streams: "0:v").map { $0.split(separator: ",").last })
        #expect(live.count > 50, "ffmpeg decoded frames")
        #expect(live.allSatisfy { vod.contains($0.split(separator: ",").last) }, "every frame is one of the samples'")
    }
}

enum Players {
    static let ffmpeg: String? = ["/usr/bin/ffmpeg", "/usr/local/bin/ffmpeg"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// One line per decoded frame of every stream, with its checksum.
    /// ffmpeg is stopped after `timeout` (a live input it cannot finish would hold the suite).
    static func framemd5(_ input: String, streams: String = "0", frames: Int? = nil, timeout: TimeInterval = 60) async throws -> [Substring] {
        let length = frames.map { ["-frames:v", String($0)] } ?? []
        let r = try await ProgramRun.run(
            ffmpeg!, ["-hide_banner", "-loglevel", "error", "-allowed_extensions", "ALL", "-i", input, "-map", streams] + length + ["-f", "framemd5", "-"],
            stderr: .discard, timeout: .seconds(timeout))
        guard r.status == 0 && !r.signalled else { throw TestFailure("ffmpeg failed on \(input)") }
        return r.out.split(separator: "\n").filter { !$0.hasPrefix("#") }
    }
}
