import Foundation
import Synchronization

/// This node's peer id (SPEC section 3), made once and kept in the cache folder's `peer-id`,
/// so that a restart is the same peer. A cache folder copied to a second node (a cloned
/// machine image, `cp -a` to another box) carries the same id, and the tracker refuses the
/// second login while the first is logged in (`LoginRefusal.peerInUse`): once the tracker has
/// heard that session again (`TrackerLink`), the link takes a new id (`renew`) and logs in
/// again, rather than stay out of the swarm for good.
public final class PeerID: Sendable {
    /// The `peer-id` file.
    public let file: String
    private let id: Mutex<String>

    /// The id kept in `cacheDirectory`, or a new one written there.
    public init(cacheDirectory: String) throws {
        file = cacheDirectory + "/peer-id"
        // A kept id no tracker takes (edited by hand) is replaced, as a missing one is.
        if let kept = try? String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines), SwarmTracker.isPeerID(kept) {
            id = Mutex(kept)
            return
        }
        try FileManager.default.createDirectory(atPath: cacheDirectory, withIntermediateDirectories: true)
        let made = Self.make()
        try Self.write(made, to: file)
        id = Mutex(made)
    }

    public var current: String { id.withLock { $0 } }

    /// Takes a new id and keeps it in the file. Returns it, and why it could not be kept (a
    /// full disk: the node goes on under the new id, and a restart reads the old one).
    public func renew() -> (id: String, notKept: String?) {
        let made = Self.make()
        id.withLock { $0 = made }
        do {
            try Self.write(made, to: file)
            return (made, nil)
        } catch {
            return (made, "\(error)")
        }
    }

    static func make() -> String { "node-" + UUID().uuidString.lowercased().prefix(13) }

    private static func write(_ id: String, to file: String) throws {
        try Data(id.utf8).write(to: URL(fileURLWithPath: file), options: .atomic)
    }
}
