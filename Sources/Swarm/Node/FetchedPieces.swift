import PieceStore
import Synchronization

/// Pieces this node fetched (from a peer, from the origin, or prepared by its own registry)
/// whose bytes have not all been sent to a player yet, with where they came from: the first
/// player's bytes of each count as fetched (the swarm's or the CDN's), every later one's as
/// this node's. A piece is settled by the bytes sent, not by being touched: a range of two
/// bytes of it takes two, and the rest counts as fetched for whoever gets it next.
public final class FetchedPieces: Sendable {
    struct Unsent: Sendable {
        var source: SwarmNode.FetchSource
        /// Bytes of the piece not yet counted as sent.
        var bytes: Int
        /// The piece's bytes: what is given back never makes more unsent.
        var size: Int
    }

    /// The pieces noted last (between `capacity / 2` and `capacity`): one fetched and never
    /// sent (prefetched for a player who left, evicted first) is let go in its turn, and the
    /// others keep their marks (clearing the whole table at a bound counted every piece
    /// fetched and unsent then as this node's).
    private let table: Mutex<RecentTable<Unsent>>
    /// The table's size, read without its lock: a node that fetched nothing (every piece held)
    /// looks in it for nothing.
    private let count = Atomic<Int>(0)

    public init(capacity: Int = 200_000) {
        table = Mutex(RecentTable(capacity: capacity))
    }

    private static func name(_ key: ObjectKey, _ index: Int) -> String { key.id + "#\(index)" }

    /// Notes that piece `index` of `key`, `bytes` long, came from `source` (before the piece
    /// is kept, so that a player reading it from the store at once sees where it came from).
    /// A fetch again (the piece was evicted before all of it was sent) notes its own source.
    public func note(_ key: ObjectKey, _ index: Int, from source: SwarmNode.FetchSource, bytes: Int) {
        guard bytes > 0 else { return }
        change { $0.put(Self.name(key, index), Unsent(source: source, bytes: bytes, size: bytes)) }
    }

    /// Takes up to `bytes` of piece `index`'s unsent bytes: where they came from and how many
    /// of `bytes` count so (the rest count as this node's). Nil when no byte of it is unsent.
    public func take(_ key: ObjectKey, _ index: Int, bytes: Int) -> (source: SwarmNode.FetchSource, bytes: Int)? {
        guard bytes > 0, count.load(ordering: .relaxed) > 0 else { return nil }
        let name = Self.name(key, index)
        return change { t -> (source: SwarmNode.FetchSource, bytes: Int)? in
            guard let unsent = t.peek(name) else { return nil }
            let taken = min(bytes, unsent.bytes)
            if taken == unsent.bytes { t.remove(name) } else { t.update(name, make: { unsent }) { $0.bytes -= taken } }
            return (unsent.source, taken)
        }
    }

    /// Gives back what `take` took, for a write that did not reach the player.
    public func giveBack(_ key: ObjectKey, _ index: Int, from source: SwarmNode.FetchSource, bytes: Int) {
        guard bytes > 0 else { return }
        // A piece fetched again meanwhile was noted whole: it stays so.
        change { $0.update(Self.name(key, index), make: { Unsent(source: source, bytes: 0, size: bytes) }) { $0.bytes = min($0.size, $0.bytes + bytes) } }
    }

    /// Changes the table under its lock, keeping `count` its size.
    private func change<T>(_ body: (inout RecentTable<Unsent>) -> T) -> T {
        table.withLock { t in
            let result = body(&t)
            t.dropLetGo()
            count.store(t.count, ordering: .relaxed)
            return result
        }
    }
}
