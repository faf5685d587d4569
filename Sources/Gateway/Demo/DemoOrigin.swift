import Foundation
import HTTPTypes
import Hummingbird

/// `serve --demo`: a local origin that serves the files of one folder (the samples) with
/// ranges per RFC 9110, so a gateway has something to proxy without any network.
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
        let path = request.uri.path.removingPercentEncoding ?? request.uri.path
        let file = root.appendingPathComponent(path).standardizedFileURL
        // Only files below the root, never a path that climbs out of it.
        guard file.path.hasPrefix(root.path + "/"),
            let data = FileManager.default.contents(atPath: file.path)
        else {
            return Response(status: .notFound)
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
