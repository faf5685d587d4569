import Hummingbird
import PieceStore
import Swarm

/// `GET /peer/v1/OBJECT/PIECE?from=PEER&token=TOKEN[&sha=HEX]`: one verified piece for another
/// node (SPEC section 3). The token is the tracker's `PieceToken` for (PEER → this node,
/// OBJECT), checked here with the app secret; `feature?upload=0` refuses every request at once.
/// `sha` (the start of the piece's SHA-256 as the asker's checksums have it): a piece of
/// another copy of the object is refused with 409, not sent to fail the asker's check.
extension GatewayResponder {
    func peerPiece(_ request: Request, path: Substring) async throws(GatewayFailure) -> Response {
        guard uploads.isOn else { throw GatewayFailure(.forbidden, "uploads are off on this node") }
        let parts = path.dropFirst("/peer/v1/".count).split(separator: "/")
        guard parts.count == 2, let index = Int(parts[1]), index >= 0 else { throw GatewayFailure(.badRequest, "expected /peer/v1/OBJECT/PIECE") }
        let objectID = String(parts[0])
        let query = request.uri.queryParameters
        guard let from = query.get("from"), let token = query.get("token"), let dot = token.firstIndex(of: "."),
            let expiry = Int64(token[..<dot]),
            PieceToken(requester: from, holder: identity.peerID, objectID: objectID, expiry: expiry).isValid(token, secret: identity.secret)
        else { throw GatewayFailure(.forbidden, "no valid piece token") }
        guard let info = node.store.info(id: objectID), let checksums = node.registry.checksums(info.key), index < checksums.layout.count
        else { throw GatewayFailure(.notFound, "piece not held") }
        if let sha = query.get("sha"), sha.lowercased() != checksums.digests[index].short {
            throw GatewayFailure(.conflict, "this node holds another copy of the object")
        }
        guard let buffer = heldPiece(info.key, index, checksums: checksums) else { throw GatewayFailure(.notFound, "piece not held") }
        let headers: HTTPFields = [.contentType: "application/octet-stream", .contentLength: String(buffer.readableBytes)]
        guard request.method == .get else { return Response(status: .ok, headers: headers, body: .init()) }
        // Counted as uploaded once sent: an asker that gave up at its deadline got nothing.
        let (stats, xresid) = (stats, info.key.xresid)
        let sending = Self.sending  // held while sent: a stop lets it end
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody(contentLength: buffer.readableBytes) { writer in
                try await writer.write(buffer)
                try await writer.finish(nil)
                stats.addUpload(buffer.readableBytes, xresid: xresid)
                withExtendedLifetime(sending) {}
            })
    }
}

/// Who this node is in the swarm: its peer id and the app secret that piece tokens are
/// checked with.
public struct SwarmIdentity: Sendable {
    public var peer: PeerID
    public var secret: String
    /// The id now: a clash at login renews it (`TrackerLink`).
    public var peerID: String { peer.current }

    public init(peer: PeerID, secret: String) {
        self.peer = peer
        self.secret = secret
    }
}
