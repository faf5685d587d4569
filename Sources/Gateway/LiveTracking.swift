import Foundation
import Synchronization

/// The media sequence numbers of the live playlists read lately, and the start times of the
/// live MPDs, by name: one that goes back (changes) is a list started over (an encoder
/// restarted), whose objects may have old names.
final class LiveSequences: Sendable {
    /// Each list's newest media sequence, and the most segments it listed at that sequence.
    private let sequences = Mutex<[String: (sequence: Int, listing: Int)]>([:])
    private let starts = Mutex<[String: String]>([:])
    /// When each list last started over, for `restartMemory`.
    private let restarts = Mutex<[String: Date]>([:])
    static let limit = 4096
    static let restartMemory: TimeInterval = 6 * 3600

    /// When list `name` last started over, within `restartMemory`.
    func restarted(_ name: String) -> Date? {
        restarts.withLock { r in r[name].flatMap { Date().timeIntervalSince($0) < Self.restartMemory ? $0 : nil } }
    }

    private func noteRestart(_ name: String) {
        restarts.withLock { r in
            if r.count >= Self.limit { r = r.filter { Date().timeIntervalSince($0.value) < Self.restartMemory } }
            if r.count < Self.limit { r[name] = Date() }
        }
    }

    /// Notes a live MPD's start (`availabilityStartTime`, ISO 8601 as written); true when it
    /// moved on from the one noted before (an earlier one is an origin's lagging copy).
    func startedOver(_ name: String, at start: String?) -> Bool {
        guard let start else { return false }
        let moved = starts.withLock { s in
            if s.count >= Self.limit && s[name] == nil { s.removeAll(keepingCapacity: true) }
            guard let before = s[name] else {
                s[name] = start
                return false
            }
            // The same text first: every read of the MPD but a restart's (no dates parsed).
            guard start != before, Self.isLater(start, than: before) else { return false }
            s[name] = start
            return true
        }
        if moved { noteRestart(name) }
        return moved
    }

    /// Whether time `a` is after `b`, both xs:dateTime as an MPD writes them: as instants
    /// (`…00.5Z` is after `…00Z`, and `01:00:00+01:00` is `00:00:00Z`; compared as text,
    /// the first read as earlier and the second as later), as text when either is not one.
    static func isLater(_ a: String, than b: String) -> Bool {
        guard let x = instant(a), let y = instant(b) else { return a > b }
        return x > y
    }

    /// Seconds since 1970 of an ISO 8601 date and time with a zone, with or without fractions.
    static func instant(_ text: String) -> Double? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = f.date(from: text) { return d.timeIntervalSince1970 }
        f.formatOptions = [.withInternetDateTime]
        return f.date(from: text)?.timeIntervalSince1970
    }

    /// Notes `sequence` for `name`, whose list holds `listing` segments; true when the list
    /// started over: it went back to 0, or so far back that it shares no segment with the one
    /// noted before, or, at the same sequence (a list that never slides: an EVENT list, or one
    /// without a media sequence), it lists far fewer segments than it did (3 at least, and
    /// half). A list one or two segments behind is an origin's edge that lags (behind a CDN,
    /// reloads reach several), not a restart.
    func wentBack(_ name: String, to sequence: Int, listing: Int) -> Bool {
        let restarted = sequences.withLock { s in
            if s.count >= Self.limit && s[name] == nil { s.removeAll(keepingCapacity: true) }
            let before = s[name] ?? (sequence, listing)
            let shrank = sequence == before.sequence && before.listing - listing >= max(3, (before.listing + 1) / 2)
            let restarted = shrank || (sequence < before.sequence && (sequence == 0 || before.sequence - sequence >= max(1, listing)))
            // A lagging edge's list is not kept as the newest.
            if restarted || sequence > before.sequence {
                s[name] = (sequence, listing)
            } else if sequence == before.sequence {
                s[name] = (sequence, max(listing, before.listing))
            }
            return restarted
        }
        if restarted { noteRestart(name) }
        return restarted
    }
}

/// The target durations of low-latency playlists, by `GatewayResponder.playlistName`: a
/// blocking reload is held at the origin for up to three of them (RFC 8216bis 6.2.5.2). A
/// bounded memo: past `limit` names it starts again.
final class LowLatencyTargets: Sendable {
    private let targets = Mutex<[String: Int]>([:])
    static let limit = 4096

    func note(_ seconds: Int, of name: String) {
        targets.withLock { t in
            if t.count >= Self.limit && t[name] == nil { t.removeAll(keepingCapacity: true) }
            t[name] = seconds
        }
    }

    func seconds(of name: String) -> Int? { targets.withLock { $0[name] } }
}

/// Holds under way, by name: one task each, which the readers of that name wait for.
final class LiveHolds: Sendable {
    private let holds = Mutex<(next: UInt64, tasks: [String: (id: UInt64, task: Task<Void, Never>)])>((0, [:]))

    /// Starts `work` as the hold of `name` (replacing one under way) and returns it.
    func start(_ name: String, _ work: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        holds.withLock { h in
            h.next += 1
            let id = h.next
            let task = Task { [weak self] in
                await work()
                self?.holds.withLock { h in if h.tasks[name]?.id == id { h.tasks[name] = nil } }
            }
            h.tasks[name] = (id, task)
            return task
        }
    }

    /// The hold of `name` under way, if any.
    func current(_ name: String) -> Task<Void, Never>? { holds.withLock { $0.tasks[name]?.task } }
}

/// Names claimed at most once per interval (a bounded memo, not a registry). Past `capacity`
/// names, those whose interval has passed are forgotten, then, if fewer than a quarter went,
/// all but the newer half: a busy node does not forget every claim at once (and queue every
/// list again), and each pruning makes room for many claims.
final class RecentlyQueued: Sendable {
    let interval: Duration
    let capacity: Int
    private let claimed = Mutex<[String: ContinuousClock.Instant]>([:])

    init(interval: Duration, capacity: Int = 10_000) {
        self.interval = interval
        self.capacity = max(2, capacity)
    }

    /// Forgets `name`'s claim: the next `claim(name)` succeeds.
    func release(_ name: String) {
        _ = claimed.withLock { $0.removeValue(forKey: name) }
    }

    /// Whether `name` was claimed within the interval (claiming nothing).
    func holds(_ name: String) -> Bool {
        let now = ContinuousClock.now
        return claimed.withLock { c in c[name].map { now - $0 < interval } ?? false }
    }

    /// True when `name` was not claimed within the interval (and claims it now).
    func claim(_ name: String) -> Bool {
        let now = ContinuousClock.now
        return claimed.withLock { c in
            if let last = c[name], now - last < interval { return false }
            if c.count >= capacity {
                c = c.filter { now - $0.value < interval }
                // Room for a quarter of the capacity at least, so that a memo whose live
                // claims stay just under it is not pruned again on each new name.
                if c.count > capacity * 3 / 4 {
                    let newer = c.sorted { $0.value > $1.value }.prefix(capacity / 2)
                    c = Dictionary(uniqueKeysWithValues: newer.map { ($0.key, $0.value) })
                }
            }
            c[name] = now
            return true
        }
    }
}
