import PieceStore
import Swarm
import Synchronization

/// The media objects of recent VOD playlists in playback order: which objects follow the
/// one a player reads. Bounded by lists and by objects (about 600 bytes each): the oldest
/// playlists are forgotten, and a list longer than the bound is kept as its first part.
final class PlayOrder: Sendable {
    struct State {
        var lists: [[ObjectRef]] = []
        /// The size of each list's halves when it is longer than a `prepare` carries, else 0
        /// (`SwarmMessage.readAheadHalfSize`).
        var halves: [Int] = []
        /// Object id → (list, position).
        var where_: [String: (list: Int, position: Int)] = [:]
        /// Object id → EXTINF seconds, for segments.
        var durations: [String: Double] = [:]
        var firstList = 0
        var objects = 0
    }

    let maxLists: Int
    /// Objects of all lists at most: a 24-hour MPD of 2 s segments lists 43,200 per
    /// Representation, and each stream (xresid) lists its own.
    let maxObjects: Int
    private let state = Mutex(State())

    init(maxLists: Int = 256, maxObjects: Int = 200_000) {
        self.maxLists = maxLists
        self.maxObjects = maxObjects
    }

    func record(_ refs: [ObjectRef], durations: [Double?]) {
        let refs = Array(refs.prefix(maxObjects))
        let ids = refs.map(\.key.id)
        let halves = SwarmMessage.readAheadHalfSize(refs)
        state.withLock { s in
            while !s.lists.isEmpty && (s.lists.count >= maxLists || s.objects + refs.count > maxObjects) {
                let old = s.lists.removeFirst()
                s.halves.removeFirst()
                s.objects -= old.count
                s.firstList += 1
                for r in old where s.where_[r.key.id]?.list == s.firstList - 1 {
                    s.where_[r.key.id] = nil
                    s.durations[r.key.id] = nil
                }
            }
            s.objects += refs.count
            let list = s.firstList + s.lists.count
            s.lists.append(refs)
            s.halves.append(halves)
            for (i, id) in ids.enumerated() {
                s.where_[id] = (list, i)
                s.durations[id] = i < durations.count ? durations[i] : nil
            }
        }
    }

    /// Whether a recent playlist listed `key`.
    func lists(_ key: ObjectKey) -> Bool { state.withLock { s in s.where_[key.id].map { $0.list >= s.firstList } ?? false } }

    /// The EXTINF duration of a segment, in seconds, if a recent playlist listed it.
    func duration(of key: ObjectKey) -> Double? { state.withLock { $0.durations[key.id] } }

    /// The part of a list too long for one `prepare` that a player asking for `key` needs at
    /// the tracker (`SwarmMessage.readAheadPart`), as a name (the list's and the part's place)
    /// and where it lies; nil while the list's plan covers it. Its objects: `refs(in:)`.
    func readAheadPart(_ key: ObjectKey) -> (name: String, list: Int, range: Range<Int>)? {
        state.withLock { s in
            guard let at = s.where_[key.id], at.list >= s.firstList else { return nil }
            let i = at.list - s.firstList
            guard let part = SwarmMessage.readAheadPart(halfSize: s.halves[i], count: s.lists[i].count, at: at.position) else { return nil }
            return ("\(at.list) \(part.lowerBound)", at.list, part)
        }
    }

    /// The objects of a part `readAheadPart` named, while its list is kept.
    func refs(in part: (list: Int, range: Range<Int>)) -> [ObjectRef] {
        state.withLock { s in
            guard part.list >= s.firstList, part.list - s.firstList < s.lists.count else { return [] }
            let refs = s.lists[part.list - s.firstList]
            return part.range.upperBound <= refs.count ? Array(refs[part.range]) : []
        }
    }

    /// Up to `count` objects after `key` in its playlist.
    func after(_ key: ObjectKey, count: Int) -> [ObjectRef] {
        guard count > 0 else { return [] }
        return state.withLock { s in
            guard let at = s.where_[key.id], at.list >= s.firstList else { return [] }
            let refs = s.lists[at.list - s.firstList]
            return Array(refs[min(at.position + 1, refs.count)..<min(at.position + 1 + count, refs.count)])
        }
    }
}
