/// Keys from the least recently used on: what an eviction walks (the piece store's objects,
/// the memory cache's pieces). Marking one used, taking one out and stepping to the next each
/// cost the same however many are listed.
///
/// The piece store's eviction used to sort every object by its last use, under the store's
/// lock, and the memory cache's looked through every piece for the oldest: with 100,000
/// objects in a full store, every piece stored held every read of the store for that sort.
public struct RecencyList<ID: Hashable & Sendable>: Sendable {
    private struct Link: Sendable {
        var older: ID?
        var newer: ID?
    }

    private var links: [ID: Link] = [:]
    /// The least recently used.
    public private(set) var oldest: ID?
    private var newest: ID?

    public init() {}

    public var count: Int { links.count }

    /// Makes `id` the most recently used, adding it if it is new.
    public mutating func use(_ id: ID) {
        guard newest != id else { return }
        remove(id)
        links[id] = Link(older: newest, newer: nil)
        if let newest { links[newest]?.newer = id } else { oldest = id }
        newest = id
    }

    public mutating func remove(_ id: ID) {
        guard let link = links.removeValue(forKey: id) else { return }
        if let older = link.older { links[older]?.newer = link.newer } else { oldest = link.newer }
        if let newer = link.newer { links[newer]?.older = link.older } else { newest = link.older }
    }

    /// The id used next after `id` (nil: `id` is the most recent, or not listed).
    public func newer(than id: ID) -> ID? { links[id]?.newer }

    /// Every id, the least recently used first.
    public var fromOldest: [ID] {
        var ids: [ID] = []
        ids.reserveCapacity(links.count)
        var next = oldest
        while let id = next {
            ids.append(id)
            next = links[id]?.newer
        }
        return ids
    }
}
