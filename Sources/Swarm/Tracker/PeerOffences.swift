import Foundation

/// What the tracker proved against the peers at one URL: bad pieces its audits confirmed, the
/// last one's time, and until when peers at the URL are banned (nil: not banned).
public struct PeerOffences: Sendable, Equatable {
    public var count: Int
    public var last: Date
    public var bannedUntil: Date?

    public init(count: Int, last: Date, bannedUntil: Date? = nil) {
        self.count = count
        self.last = last
        self.bannedUntil = bannedUntil
    }

    /// Whether the record still says something at `now`: a ban that has not run out, or an
    /// offence within `memory` (older ones are forgotten, so that a peer is banned for
    /// `banAfter` bad pieces within that time, not over its whole life).
    func matters(at now: Date, memory: TimeInterval) -> Bool {
        if let bannedUntil, bannedUntil > now { return true }
        return bannedUntil == nil && now.timeIntervalSince(last) < memory
    }
}

/// Where a tracker keeps what it proved against peers, by URL (`SwarmTracker.banKey`), so
/// that a restart does not hand a banned peer out again.
public protocol OffenceLog: Sendable {
    /// Every URL's record.
    func offences() throws -> [String: PeerOffences]
    /// Keeps `record` for `url` (nil: forgets it).
    func record(_ record: PeerOffences?, for url: String) throws
}
