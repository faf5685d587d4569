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
/// half the capacity, the old one (what was not used since the last turn) is let go, but for
/// the entries `carry` keeps, and the young one becomes old. What is let go waits in
/// `takeLetGo()` for its owner (put again before that, it is not let go).
public struct RecentTable<Value> {
    private var young: [String: Value] = [:]
    private var old: [String: Value] = [:]
    private var letGo: [String: Value] = [:]
    public let half: Int
    private let carry: @Sendable (Value) -> Bool

    public init(capacity: Int, carry: @escaping @Sendable (Value) -> Bool = { _ in false }) {
        half = max(1, capacity / 2)
        self.carry = carry
    }

    /// Fills a new table with `entries`, the most recently used first, as many as it keeps;
    /// returns the keys of those left out.
    public mutating func load(_ entries: [(key: String, value: Value)]) -> [String] {
        for (i, e) in entries.prefix(2 * half).enumerated() {
            if i < half - 1 { young[e.key] = e.value } else { old[e.key] = e.value }
        }
        return entries.dropFirst(2 * half).map(\.key)
    }

    public var count: Int { young.count + old.count }

    /// The entry, without counting a use.
    public func peek(_ key: String) -> Value? { young[key] ?? old[key] }

    /// The entry, counted as used.
    public mutating func use(_ key: String) -> Value? {
        if let value = young[key] { return value }
        guard let value = old[key] else { return nil }
        put(key, value)
        return value
    }

    /// Puts `value` under `key`, counted as used.
    public mutating func put(_ key: String, _ value: Value) {
        old[key] = nil
        letGo[key] = nil
        young[key] = value
        guard young.count >= half else { return }
        for (key, value) in old {
            if carry(value) { young[key] = value } else { letGo[key] = value }
        }
        old = young
        young = [:]
    }

    /// The entries let go since the last call.
    public mutating func takeLetGo() -> [String: Value] {
        defer { letGo = [:] }
        return letGo
    }
}

extension RecentTable: Sendable where Value: Sendable {}
