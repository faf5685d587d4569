/// Keys from the least recently used on: what an eviction walks (the piece store's objects,
/// the memory cache's pieces). Marking one used, taking one out and stepping to the next each
/// cost the same however many are listed: one hash of the key, and the links are array slots.
///
/// The piece store's eviction used to sort every object by its last use, under the store's
/// lock, and the memory cache's looked through every piece for the oldest: with 100,000
/// objects in a full store, every piece stored held every read of the store for that sort.
public struct RecencyList<ID: Hashable & Sendable>: Sendable {
    /// Each listed key's slot; a slot's key and its neighbours (`none`: the end).
    private var slots: [ID: Int] = [:]
    private var keys: [ID?] = []
    private var older: [Int] = []
    private var newer: [Int] = []
    /// Slots given back, for the next keys.
    private var free: [Int] = []
    private var oldestSlot = none
    private var newestSlot = none
    private static var none: Int { -1 }

    public init() {}

    public var count: Int { slots.count }

    /// The least recently used.
    public var oldest: ID? { oldestSlot == Self.none ? nil : keys[oldestSlot] }

    /// Makes `id` the most recently used, adding it if it is new. Returns whether the order
    /// changed: false when `id` already was the most recent.
    @discardableResult
    public mutating func use(_ id: ID) -> Bool {
        if let slot = slots[id] {
            guard slot != newestSlot else { return false }
            unlink(slot)
            append(slot)
            return true
        }
        let slot: Int
        if let reused = free.popLast() {
            slot = reused
            keys[slot] = id
        } else {
            slot = keys.count
            keys.append(id)
            older.append(Self.none)
            newer.append(Self.none)
        }
        slots[id] = slot
        append(slot)
        return true
    }

    public mutating func remove(_ id: ID) {
        guard let slot = slots.removeValue(forKey: id) else { return }
        unlink(slot)
        keys[slot] = nil
        free.append(slot)
    }

    /// The id used next after `id` (nil: `id` is the most recent, or not listed).
    public func newer(than id: ID) -> ID? {
        guard let slot = slots[id], newer[slot] != Self.none else { return nil }
        return keys[newer[slot]]
    }

    /// Every id, the least recently used first.
    public var fromOldest: [ID] {
        var ids: [ID] = []
        ids.reserveCapacity(slots.count)
        var slot = oldestSlot
        while slot != Self.none, let id = keys[slot] {
            ids.append(id)
            slot = newer[slot]
        }
        return ids
    }

    private mutating func unlink(_ slot: Int) {
        let (o, n) = (older[slot], newer[slot])
        if o != Self.none { newer[o] = n } else { oldestSlot = n }
        if n != Self.none { older[n] = o } else { newestSlot = o }
        older[slot] = Self.none
        newer[slot] = Self.none
    }

    private mutating func append(_ slot: Int) {
        older[slot] = newestSlot
        newer[slot] = Self.none
        if newestSlot != Self.none { newer[newestSlot] = slot } else { oldestSlot = slot }
        newestSlot = slot
    }
}
