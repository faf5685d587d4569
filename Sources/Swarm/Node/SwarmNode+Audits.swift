import Foundation
import Logging
import Origin
import PieceStore
import Synchronization

/// Audits of the bad pieces nodes report.
extension SwarmNode {
    // MARK: audits

    /// A node reported that the holder at `holderURL` sent it a bad piece `index` of object
    /// `objectID`: the same request is made again here, naming the reporter (`requester`,
    /// with a piece `token` the tracker made for it), and its answer checked against the
    /// registry's checksum. A holder that lies only to some requests could still tell the two
    /// apart (by address, or as a repeat of a request it just answered) and answer this one
    /// truly; that holder is not banned, but each node it lies to drops it for the object.
    public func audit(_ objectID: String, piece index: Int, holderURL: String, requester: String, token: String) async -> AuditVerdict {
        guard let checksums = registry.ready(id: objectID)?.checksums else { return .inconclusive("no checksums ready for the object") }
        guard index >= 0, index < checksums.layout.count else { return .inconclusive("no such piece") }
        let size = checksums.layout.size(of: index)
        let url = Self.peerPieceURL(holderURL, objectID, index, from: requester, token: token, sha: checksums.digests[index].short)
        let request = OriginRequest(url: url, timeouts: .init(connect: .seconds(1), idle: Self.auditTimeout, total: Self.auditTimeout), maxBodySize: Int64(size))
        let bytes: [UInt8]
        do {
            let response = try await peerClient.fetch(request)
            guard response.status == 200 else { return .inconclusive("the holder answered \(response.status)") }
            bytes = try await response.body.collect(upTo: size)
        } catch {
            // More bytes than the piece has is a piece that cannot match.
            if error.code == .tooLarge { return .bad("the holder sent more bytes than the piece has") }
            return .inconclusive("the holder could not be fetched from: \(error)")
        }
        guard bytes.withUnsafeBytes({ checksums.matches(index, $0) }) else { return .bad("the holder sent bytes that fail the piece's checksum") }
        return .intact
    }

    /// How long an audit's piece request may take.
    static let auditTimeout: Duration = .seconds(5)
}
