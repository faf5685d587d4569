import PieceStore
import Synchronization

/// Which of a VOD playlist's objects are prepared ahead of its players: after each object a
/// player reaches (asks for, or a node announces or wants), those that start within `ahead`
/// seconds of media time after its end.
///
/// Preparing a whole VOD as soon as its playlist is opened makes the CDN send all of it, even
/// for viewers who leave after a minute: two players watching the first 12 segments of a
/// 3,000-segment VOD had the origin send 1.5 GB for 12 MB played (measured on loopback). The
/// window bounds that to `ahead` past where players went, and moves with them. Nothing is
/// prepared ahead until a player reaches an object, so a player who resumes mid-VOD or
/// switches to another rendition costs nothing at the start of the playlist it skipped.
public final class ReadAheadWindow: Sendable {
    /// Seconds of media prepared past an object a player reached; nil: no bound (every object
    /// of a playlist when it is planned).
    public let ahead: Double?

    /// Objects of all lists held at most (the least recently used lists go first): about
    /// 30 MB of ids and positions.
    let maxObjects: Int
    /// What an object counts for in a playlist that gives no durations at all.
    static let unknownDuration = 6.0
    /// Objects reached before their playlist was planned (a player's first request can come
    /// before the plan of the playlist it read), kept this long and at most this many.
    static let pendingFor: Duration = .seconds(30)
    static let maxPending = 4096

    struct List {
        /// Its identity (`name(of:)`), the key of `State.names`.
        let name: String
        var refs: [ObjectRef]
        /// Media time at which each object starts, and the end of the last one (seconds).
        var starts: [Double]
        /// Objects handed out so far. Not a prefix: a player who seeks skips what lies between.
        var released: [Bool]
    }

    struct State {
        var lists: [UInt64: List] = [:]
        /// Object id → its list and position (the newest list that names it).
        var positions: [String: (list: UInt64, index: Int)] = [:]
        /// A list's identity → the list, so the players of one playlist share one window.
        var names: [String: UInt64] = [:]
        var objects = 0
        /// The lists from the least recently used on: a list dropped for room is found at once
        /// (each was found by a scan of all lists, under the lock every `want` takes: a
        /// `prepare` of 300 new objects into a window full of one-object lists held the
        /// tracker's wants for 18 s).
        var recency = RecencyList<UInt64>()
        var next: UInt64 = 0
        var pending: [String: ContinuousClock.Instant] = [:]
    }

    private let state = Mutex(State())
    /// Told of each playlist planned (afresh, or with other URLs: new anti-leech tokens) and of
    /// those dropped, in the order they happen: the registry keeps them, so that a restart goes
    /// on reading ahead. Called under the window's lock, so it must only hand the change on.
    public typealias Keeper = @Sendable (_ planned: (name: String, refs: [ObjectRef])?, _ dropped: [String]) -> Void
    private let keep: Keeper?

    public init(ahead: Duration?, maxObjects: Int = 200_000, keep: Keeper? = nil) {
        self.maxObjects = maxObjects
        self.ahead = ahead.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        self.keep = keep
    }

    /// Playlists planned before a restart, least recently planned first: known again, with
    /// nothing handed out, so their players' next requests move their windows on.
    public func restore(_ playlists: [(name: String, refs: [ObjectRef])]) {
        guard let ahead, ahead > 0 else { return }
        state.withLock { s in
            var dropped: [String] = []
            for (name, refs) in playlists where !refs.isEmpty && s.names[name] == nil {
                s.next += 1
                dropped += Self.add(name, refs, id: s.next, maxObjects: maxObjects, &s)
            }
            if !dropped.isEmpty { keep?(nil, dropped) }
        }
    }

    static func name(of refs: [ObjectRef]) -> String? {
        guard let first = refs.first, let last = refs.last else { return nil }
        return "\(first.key.id) \(last.key.id) \(refs.count)"
    }

    /// Adds a list of `refs` under `name` and `id`, dropping the least recently used lists
    /// past the bound; returns the names of those dropped.
    private static func add(_ name: String, _ refs: [ObjectRef], id: UInt64, maxObjects: Int, _ s: inout State) -> [String] {
        let refs = Array(refs.prefix(maxObjects))
        let dropped = evict(to: maxObjects - refs.count, &s)
        let durations = refs.contains { $0.duration != nil } ? refs.map { max($0.duration ?? 0, 0) } : refs.map { _ in unknownDuration }
        var starts: [Double] = [0]
        starts.reserveCapacity(refs.count + 1)
        for d in durations { starts.append(starts[starts.count - 1] + d) }
        for (i, ref) in refs.enumerated() { s.positions[ref.key.id] = (id, i) }
        s.lists[id] = List(name: name, refs: refs, starts: starts, released: Array(repeating: false, count: refs.count))
        _ = s.recency.use(id)
        s.names[name] = id
        s.objects += refs.count
        return dropped
    }

    /// A playlist's objects in playback order. Returns those due now: without a bound, all of
    /// them; else those ahead of objects players reached before the plan (none for a playlist
    /// opened afresh: the window opens at its first request).
    public func plan(_ refs: [ObjectRef]) -> [ObjectRef] {
        guard let ahead else { return refs }
        guard ahead > 0, let name = Self.name(of: refs) else { return [] }
        let now = ContinuousClock.now
        return state.withLock { s -> [ObjectRef] in
            s.next += 1
            let id: UInt64
            if let known = s.names[name] {
                id = known
                _ = s.recency.use(id)
                // The same objects under URLs of their own (a player's newer tokens): those are
                // the ones to prepare from from now on.
                if s.lists[id]!.refs.count == refs.count, !s.lists[id]!.refs.elementsEqual(refs, by: { $0.url == $1.url }) {
                    s.lists[id]!.refs = refs
                    keep?((name, refs), [])
                }
            } else {
                id = s.next
                let dropped = Self.add(name, refs, id: id, maxObjects: maxObjects, &s)
                keep?((name, s.lists[id]!.refs), dropped)
            }
            guard !s.pending.isEmpty else { return [] }
            // Objects of this list reached before it was planned.
            let count = s.lists[id]!.refs.count
            var due: [ObjectRef] = []
            for i in 0..<count {
                let object = s.lists[id]!.refs[i].key.id
                guard let at = s.pending[object] else { continue }
                s.pending[object] = nil
                if now - at < Self.pendingFor { due += Self.release(after: i, ahead: ahead, &s.lists[id]!) }
            }
            return due
        }
    }

    /// Players reached these objects: the objects of their playlists now due. Those of no
    /// playlist known yet are remembered for a plan to come if `remember` (not for what a node
    /// announces it holds at login: thousands of objects, most long played).
    public func reached(_ ids: some Sequence<String>, remember: Bool = true) -> [ObjectRef] {
        guard let ahead, ahead > 0 else { return [] }
        let now = ContinuousClock.now
        return state.withLock { s -> [ObjectRef] in
            var due: [ObjectRef] = []
            for id in ids {
                guard let at = s.positions[id], s.lists[at.list] != nil else {
                    guard remember else { continue }
                    if s.pending.count >= Self.maxPending {
                        s.pending = s.pending.filter { now - $0.value < Self.pendingFor }
                        if s.pending.count >= Self.maxPending { s.pending.removeAll() }
                    }
                    s.pending[id] = now
                    continue
                }
                _ = s.recency.use(at.list)
                due += Self.release(after: at.index, ahead: ahead, &s.lists[at.list]!)
            }
            return due
        }
    }

    /// Hands out the objects of `list` after `index` that start within `ahead` of its end and
    /// were not handed out yet.
    private static func release(after index: Int, ahead: Double, _ list: inout List) -> [ObjectRef] {
        let limit = list.starts[index + 1] + ahead
        var due: [ObjectRef] = []
        var i = index + 1
        while i < list.refs.count && list.starts[i] < limit {
            if !list.released[i] {
                list.released[i] = true
                due.append(list.refs[i])
            }
            i += 1
        }
        return due
    }

    /// Of `refs`, those a plan or a player's progress handed out (all of them without a bound).
    public func handedOut(_ refs: [ObjectRef]) -> [ObjectRef] {
        guard ahead != nil else { return refs }
        return state.withLock { s in
            refs.filter { ref in
                guard let at = s.positions[ref.key.id], let list = s.lists[at.list] else { return false }
                return list.released[at.index]
            }
        }
    }

    /// Drops the least recently used lists until at most `limit` objects are held; returns
    /// their names.
    private static func evict(to limit: Int, _ s: inout State) -> [String] {
        var dropped: [String] = []
        while s.objects > max(limit, 0), let id = s.recency.oldest {
            s.recency.remove(id)
            guard let list = s.lists.removeValue(forKey: id) else { continue }
            s.objects -= list.refs.count
            for ref in list.refs where s.positions[ref.key.id]?.list == id { s.positions[ref.key.id] = nil }
            s.names[list.name] = nil
            dropped.append(list.name)
        }
        return dropped
    }
}
