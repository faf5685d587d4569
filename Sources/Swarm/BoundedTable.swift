extension Dictionary {
    /// Keeps a memo under `limit` entries: past it, those no longer `recent` go, and all of
    /// them if that is not enough (a bounded memo, not a registry).
    public mutating func keepUnder(_ limit: Int, recent: (Value) -> Bool) {
        guard count >= limit else { return }
        self = filter { recent($0.value) }
        if count >= limit { removeAll() }
    }
}

/// A table of at most `capacity` entries, the ones used last (an approximate LRU at the cost
/// of a dictionary move): a new or used entry goes into the young generation; when that holds
/// half the capacity, the old one (what was not used since the last turn) is let go whole,
/// and the young one becomes old. What is let go waits in `takeLetGo` for its owner (put again
/// before that, it is not let go), so that a turn costs the lock nothing but moves.
public struct RecentTable<Value> {
    private var young: [String: Value] = [:]
    private var old: [String: Value] = [:]
    private var letGo: [String: Value] = [:]
    private let half: Int

    public init(capacity: Int) {
        half = max(1, capacity / 2)
    }

    /// Fills a new table with `entries`, the most recently used first: as many as it keeps go
    /// into the old generation (a generation of grace: the table may hold half as many again
    /// until its first turn), the rest are let go at once.
    public mutating func load(_ entries: [(key: String, value: Value)]) {
        for (i, e) in entries.enumerated() {
            if i < 2 * half { old[e.key] = e.value } else { letGo[e.key] = e.value }
        }
    }

    public var count: Int { young.count + old.count }

    /// Whether entries wait to be taken by `takeLetGo`.
    public var hasLetGo: Bool { !letGo.isEmpty }

    /// The entry, without counting a use.
    public func peek(_ key: String) -> Value? { young[key] ?? old[key] }

    /// The entry, counted as used.
    public mutating func use(_ key: String) -> Value? {
        if let value = young[key] { return value }
        guard let value = old.removeValue(forKey: key) else { return nil }
        young[key] = value
        turnIfFull()
        return value
    }

    /// Puts `value` under `key`, counted as used.
    public mutating func put(_ key: String, _ value: Value) {
        update(key, make: { value }) { $0 = value }
    }

    /// Changes the entry of `key` where it stands (made by `make` if there is none), counted as
    /// used.
    public mutating func update(_ key: String, make: () -> Value, _ change: (inout Value) -> Void) {
        letGo[key] = nil
        if young[key] == nil { young[key] = old.removeValue(forKey: key) ?? make() }
        change(&young[key]!)
        turnIfFull()
    }

    /// Drops the entry of `key`, and a copy of it waiting to be let go (not let go: its owner
    /// moved it elsewhere, where it lives on). A registry entry moved to the other table (a
    /// ready object let go and prepared again) left its ready copy here, and the deletion of
    /// that copy removed the pieces its new job was writing.
    public mutating func remove(_ key: String) {
        letGo[key] = nil
        if young.removeValue(forKey: key) == nil { old[key] = nil }
    }

    private mutating func turnIfFull() {
        guard young.count >= half else { return }
        if letGo.isEmpty { letGo = old } else { letGo.merge(old) { _, turned in turned } }
        old = young
        young = [:]
    }

    /// Forgets the entries let go (an owner with nothing to do for them).
    public mutating func dropLetGo() { letGo = [:] }

    /// Up to `limit` of the entries let go, taken out.
    public mutating func takeLetGo(upTo limit: Int) -> [(key: String, value: Value)] {
        guard letGo.count > limit else {
            defer { letGo = [:] }
            return letGo.map { ($0.key, $0.value) }
        }
        let taken = letGo.prefix(limit).map { ($0.key, $0.value) }
        for (key, _) in taken { letGo[key] = nil }
        return taken
    }
}

extension RecentTable: Sendable where Value: Sendable {}
