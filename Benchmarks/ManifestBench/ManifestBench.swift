import Foundation
import Manifest

/// In-process manifest rewrite throughput, for scripts/bench: rewrites one file many times and
/// prints the median time of one rewrite and the MB/s it gives.
/// Usage: ManifestBench FILE BASE-URL ITERATIONS. With MANIFEST_BENCH_SEGMENTS=1 in the
/// environment, an MPD's rewrite also lists its segments for read-ahead, as the gateway's does
/// for the first request of an MPD in a minute.
@main
struct ManifestBench {
    static func main() throws {
        let args = CommandLine.arguments
        guard args.count == 4, let iterations = Int(args[3]) else {
            FileHandle.standardError.write(Data("usage: ManifestBench FILE BASE-URL ITERATIONS\n".utf8))
            exit(2)
        }
        let input = Array(try Data(contentsOf: URL(fileURLWithPath: args[1])))
        let base = try OriginURL(args[2])
        guard let format = ManifestFormat.detect(body: input, path: args[1]) else {
            FileHandle.standardError.write(Data("not a manifest\n".utf8))
            exit(1)
        }
        var times: [Double] = []
        var outputBytes = 0
        let clock = ContinuousClock()
        for i in 0..<(iterations + 2) {
            let start = clock.now
            outputBytes = try rewrite(input, format: format, base: base)
            let elapsed = clock.now - start
            if i >= 2 {  // two warm-up rounds
                times.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            }
        }
        times.sort()
        let median = times[times.count / 2]
        print(String(format: "input_bytes=%d output_bytes=%d median_s=%.6f mb_per_s=%.1f",
            input.count, outputBytes, median, Double(input.count) / median / 1e6))
    }

    static func rewrite(_ input: [UInt8], format: ManifestFormat, base: OriginURL) throws -> Int {
        switch format {
        case .hls:
            var options = HLSRewriter.Options()
            options.xresid = try XResID("bench")
            options.maxInputSize = Int.max
            return try HLSRewriter(playlistURL: base, options: options).rewrite(input).output.count
        case .dash:
            var options = DASHRewriter.Options()
            options.xresid = try XResID("bench")
            options.maxInputSize = Int.max
            options.collectSegments = ProcessInfo.processInfo.environment["MANIFEST_BENCH_SEGMENTS"] == "1"
            return try DASHRewriter(mpdURL: base, options: options).rewrite(input).output.count
        }
    }
}
