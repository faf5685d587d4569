extension Dictionary {
    /// Keeps a memo under `limit` entries: past it, those no longer `recent` go, and all of
    /// them if that is not enough (a bounded memo, not a registry).
    public mutating func keepUnder(_ limit: Int, recent: (Value) -> Bool) {
        guard count >= limit else { return }
        self = filter { recent($0.value) }
        if count >= limit { removeAll() }
    }
}
