import Foundation
import HTTPTypes
import Hummingbird

/// `serve --demo`: a local origin that serves the files of one folder (the samples) with
/// ranges per RFC 9110, so a gateway has something to proxy without any network. Below
/// `/live/`, the same files as a live stream: a VOD media playlist becomes a live one that
/// plays its segments in a loop by the wall clock (`LiveLoop`).
public struct DemoOrigin: HTTPResponder {
    public typealias Context = BasicRequestContext

    public let root: URL

    public init(root: URL) {
        self.root = root.standardizedFileURL
    }

    static let contentTypes: [String: String] = [
        "m3u8": "application/vnd.apple.mpegurl", "mpd": "application/dash+xml", "ts": "video/mp2t",
        "m4s": "video/iso.segment", "mp4": "video/mp4", "bin": "application/octet-stream", "key": "application/octet-stream",
    ]

    public func respond(to request: Request, context: Context) async throws -> Response {
        var path = request.uri.path.removingPercentEncoding ?? request.uri.path
        let live = path.hasPrefix(LiveLoop.prefix)
        if live { path.removeFirst(LiveLoop.prefix.count - 1) }
        let file = root.appendingPathComponent(path).standardizedFileURL
        // Only files below the root, never a path that climbs out of it.
        guard file.path.hasPrefix(root.path + "/"),
            let data = FileManager.default.contents(atPath: file.path)
        else {
            return Response(status: .notFound)
        }
        if live, file.pathExtension.lowercased() == "m3u8", let loop = LiveLoop(vod: String(decoding: data, as: UTF8.self)) {
            let text = loop.playlist(at: Date().timeIntervalSince1970)
            return Response(
                status: .ok, headers: [.contentType: "application/vnd.apple.mpegurl", .cacheControl: "no-cache"],
                body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        var headers: HTTPFields = [
            .contentType: Self.contentTypes[file.pathExtension.lowercased()] ?? "application/octet-stream",
            .acceptRanges: "bytes",
        ]
        let length = Int64(data.count)
        let range: RangeRequest
        do { range = try RangeRequest.resolve(request.headers[.range], length: length) } catch {
            return Response(status: .badRequest)
        }
        switch range {
        case .full:
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
        case .unsatisfiable:
            headers[.contentRange] = "bytes */\(length)"
            return Response(status: .rangeNotSatisfiable, headers: headers)
        case .partial(let r):
            headers[.contentRange] = "bytes \(r.lowerBound)-\(r.upperBound)/\(length)"
            let slice = data[Int(r.lowerBound)...Int(r.upperBound)]
            return Response(status: .partialContent, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: slice)))
        }
    }
}

/// A VOD media playlist played as a live one, in a loop: segment `g` of the stream is the VOD's
/// segment `g mod n`, starting at the loop's `g / n`th turn, timed from 1970 so that every
/// process shows the same stream; a discontinuity where each turn starts again. The playlist
/// lists the `window` segments that have ended by now.
struct LiveLoop {
    static let prefix = "/live/"
    /// The VOD's header tags that apply to a live playlist (not its type, sequence or end).
    let header: [String]
    /// Each segment's tags and URI, as written, and its duration.
    let segments: [(lines: [String], duration: Double)]
    let window = 6

    /// Nil for a master playlist (served as it is: its variants are live below `/live/`), and
    /// for a playlist that cannot loop: segments without a duration, byte ranges, or a key
    /// without an IV.
    init?(vod text: String) {
        var header: [String] = []
        var segments: [(lines: [String], duration: Double)] = []
        var pending: [String] = []
        var duration: Double?
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#EXT-X-ENDLIST") || line.hasPrefix("#EXT-X-PLAYLIST-TYPE")
                || line.hasPrefix("#EXT-X-MEDIA-SEQUENCE") || line.hasPrefix("#EXT-X-DISCONTINUITY-SEQUENCE")
            {
                continue
            }
            // Byte ranges continue one another; a key without an IV takes the segment's
            // sequence number, which the loop changes.
            if line.hasPrefix("#EXT-X-BYTERANGE") || (line.hasPrefix("#EXT-X-KEY") && !line.contains("METHOD=NONE") && !line.contains("IV=")) {
                return nil
            }
            if line.hasPrefix("#EXTINF:") {
                duration = Double(line.dropFirst(8).prefix { $0 != "," })
                pending.append(line)
            } else if line.hasPrefix("#") {
                if segments.isEmpty && pending.isEmpty { header.append(line) } else { pending.append(line) }
            } else {
                guard let d = duration, d.isFinite, d >= 0.001 else { return nil }
                segments.append((pending + [line], d))
                pending = []
                duration = nil
            }
        }
        guard !segments.isEmpty else { return nil }
        self.header = header
        self.segments = segments
    }

    /// The live playlist at `now` (seconds since 1970).
    func playlist(at now: Double) -> String {
        let n = segments.count
        let turn = segments.reduce(0) { $0 + $1.duration }
        // The last segment that has ended: whole turns, then segments of the turn under way.
        let turns = Int(now / turn)
        var into = now - Double(turns) * turn
        var last = turns * n - 1
        for s in segments {
            guard into >= s.duration else { break }
            into -= s.duration
            last += 1
        }
        let first = max(0, last - window + 1)
        var lines = header
        lines.append("#EXT-X-MEDIA-SEQUENCE:\(first)")
        // Discontinuities (one before each turn but the first) before the window.
        lines.append("#EXT-X-DISCONTINUITY-SEQUENCE:\(first > 0 ? (first - 1) / n : 0)")
        for g in first...max(first, last) where g <= last {
            if g % n == 0 && g > 0 { lines.append("#EXT-X-DISCONTINUITY") }
            lines += segments[g % n].lines
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
