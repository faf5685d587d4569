import Synchronization

/// Which of a VOD playlist's objects are prepared ahead of its players: those that start
/// within `ahead` seconds of media time after the end of the furthest object a player has
/// reached (asked for, or a node announced or wanted).
///
/// Preparing a whole VOD as soon as its playlist is opened makes the CDN send all of it, even
/// for viewers who leave after a minute: two players watching the first 12 segments of a
/// 3,000-segment VOD had the origin send 1.5 GB for 12 MB played. The window bounds that to
/// `ahead` per playlist, and moves with the players.
public final class ReadAheadWindow: Sendable {
    /// Seconds of media prepared past the furthest object reached; nil: no bound (every
    /// object of a playlist at once).
    public let ahead: Double?

    /// Objects of all lists held at most (the least recently used lists go first): about
    /// 30 MB of ids and positions.
    let maxObjects: Int

    struct List {
        var refs: [ObjectRef]
        /// Media time at which each object starts, and the end of the last one (seconds;
        /// an object without a duration, such as an init section, takes none).
        var starts: [Double]
        /// Objects handed out so far. Not a prefix: a player who seeks skips what lies between.
        var released: [Bool]
        var used: UInt64
    }

    struct State {
        var lists: [UInt64: List] = [:]
        /// Object id → its list and position (the newest list that names it).
        var positions: [String: (list: UInt64, index: Int)] = [:]
        /// A list's identity → the list, so the players of one playlist share one window.
        var names: [String: UInt64] = [:]
        var objects = 0
        var next: UInt64 = 0
    }

    private let state = Mutex(State())
    /// Lists held; `reached` costs nothing while there are none.
    private let listCount = Atomic<Int>(0)

    public init(ahead: Duration?, maxObjects: Int = 200_000) {
        self.maxObjects = maxObjects
        self.ahead = ahead.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
    }

    /// A playlist's objects in playback order: the ones due now (those starting within
    /// `ahead`). A playlist already known (another player of it) is not planned again, and
    /// nothing more is due.
    public func plan(_ refs: [ObjectRef]) -> [ObjectRef] {
        guard let ahead else { return refs }
        guard let first = refs.first, let last = refs.last else { return [] }
        let name = "\(first.key.id) \(last.key.id) \(refs.count)"
        return state.withLock { s -> [ObjectRef] in
            s.next += 1
            if let id = s.names[name] {
                s.lists[id]?.used = s.next
                return []
            }
            let refs = Array(refs.prefix(maxObjects))
            var starts: [Double] = []
            starts.reserveCapacity(refs.count + 1)
            var t = 0.0
            for ref in refs {
                starts.append(t)
                t += max(ref.duration ?? 0, 0)
            }
            starts.append(t)
            let id = s.next
            var list = List(refs: refs, starts: starts, released: Array(repeating: false, count: refs.count), used: id)
            Self.evict(to: maxObjects - refs.count, &s)
            for (i, ref) in refs.enumerated() { s.positions[ref.key.id] = (id, i) }
            let due = Self.release(from: 0, before: ahead, &list)
            s.lists[id] = list
            s.names[name] = id
            s.objects += refs.count
            listCount.store(s.lists.count, ordering: .relaxed)
            return due
        }
    }

    /// Players reached these objects: the objects of their playlists now due.
    public func reached(_ ids: some Sequence<String>) -> [ObjectRef] {
        guard let ahead, listCount.load(ordering: .relaxed) > 0 else { return [] }
        return state.withLock { s -> [ObjectRef] in
            var due: [ObjectRef] = []
            for id in ids {
                guard let at = s.positions[id], var list = s.lists[at.list] else { continue }
                s.next += 1
                list.used = s.next
                due += Self.release(from: at.index + 1, before: list.starts[at.index + 1] + ahead, &list)
                s.lists[at.list] = list
            }
            return due
        }
    }

    /// Hands out the objects of `list` from `first` on that start before `limit` and were not
    /// handed out yet.
    private static func release(from first: Int, before limit: Double, _ list: inout List) -> [ObjectRef] {
        var due: [ObjectRef] = []
        var i = first
        while i < list.refs.count && list.starts[i] < limit {
            if !list.released[i] {
                list.released[i] = true
                due.append(list.refs[i])
            }
            i += 1
        }
        return due
    }

    /// Drops the least recently used lists until at most `limit` objects are held.
    private static func evict(to limit: Int, _ s: inout State) {
        while s.objects > max(limit, 0), let (id, list) = s.lists.min(by: { $0.value.used < $1.value.used }) {
            s.lists[id] = nil
            s.objects -= list.refs.count
            for ref in list.refs where s.positions[ref.key.id]?.list == id { s.positions[ref.key.id] = nil }
            s.names = s.names.filter { $0.value != id }
        }
    }
}
