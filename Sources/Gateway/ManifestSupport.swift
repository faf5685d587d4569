import Manifest
import PieceStore
import Swarm
import Synchronization

extension GatewayResponder {
    /// Rewrites an MPD fetched from `url` so that every URL a player derives from it comes back
    /// through this gateway with the stream's xresid; with `collectSegments`, a static MPD's
    /// Representations' segments come along, for read-ahead.
    /// `now`: the clock a dynamic MPD's live tails are listed against.
    func rewriteDASH(_ body: [UInt8], url: OriginURL, xresid: XResID, collectSegments: Bool = false, now: Double? = nil) throws(ManifestError) -> DASHRewrite {
        var options = DASHRewriter.Options()
        options.gateway = currentPublicURL
        options.xresid = xresid
        options.maxInputSize = configuration.maxManifestSize
        options.inheritQuery = configuration.inheritQuery
        options.collectSegments = collectSegments
        options.now = now
        return try DASHRewriter(mpdURL: url, options: options).rewrite(body)
    }

    /// Queues a static MPD's segments for preparation, one Representation after another, as a
    /// VOD playlist's are: each Representation is a list that read-ahead and prefetch follow.
    /// Runs on `readAheadPlans`, which plans each list now.
    func prepareAhead(_ lists: [DASHSegmentList], xresid: XResID, mpdQuery: String?) {
        for list in lists {
            let items = list.segments.lazy.compactMap { s in (try? OriginURL(s.url)).map { (origin: $0, duration: s.duration) } }
            // No prefetch when the MPD is read: it lists every Representation, and a player
            // plays one of them.
            prepareAhead(listedObjects(items, xresid: xresid, listQuery: mpdQuery), prefetchFirst: false, planNow: true)
        }
    }

    /// Queues the live tails of a dynamic MPD's Representations that this node's players play
    /// (`LiveRepresentations`), each object once, as a live playlist's: the MPD lists every
    /// Representation, and a player plays one of each kind. The objects listed are
    /// remembered, so that a player's request of one marks its Representation as played.
    /// Returns the objects queued now.
    /// The copies from before a restart of `mpd` that its lists name, doubted (as
    /// `prepareLiveTails` does, without queuing tails).
    func doubtCopiesFromBefore(_ lists: [DASHSegmentList], xresid: XResID, mpdQuery: String?, mpd: String) {
        for list in lists {
            let items = list.segments.lazy.compactMap { s in (try? OriginURL(s.url)).map { (origin: $0, duration: s.duration) } }
            doubtCopiesFromBefore(listedObjects(items, xresid: xresid, listQuery: mpdQuery), list: mpd, xresid: xresid)
        }
    }

    func prepareLiveTails(_ lists: [DASHSegmentList], xresid: XResID, mpdQuery: String?, mpd: String) -> [(key: ObjectKey, url: String, duration: Double?)] {
        var queued: [(key: ObjectKey, url: String, duration: Double?)] = []
        for list in lists {
            let items = list.segments.lazy.compactMap { s in (try? OriginURL(s.url)).map { (origin: $0, duration: s.duration) } }
            let objects = listedObjects(items, xresid: xresid, listQuery: mpdQuery)
            // Every Representation's, played or not: a restart's old copies are no one's.
            doubtCopiesFromBefore(objects, list: mpd, xresid: xresid)
            // By @id, which stays when Periods come and go (by place only without one).
            let representation = mpd + " " + (list.representationID.map { "id " + $0 } ?? "#\(list.position)")
            liveRepresentations.listed(objects.map(\.key.id), of: representation)
            if liveRepresentations.isPlayed(representation) { queued += prepareLiveTail(objects) }
        }
        return queued
    }
}

/// Which Representations of live MPDs this node's players play: those with an object a
/// player asked for within `playedWithin`, among the objects their tails listed. Players play
/// behind the live edge (an MPD's suggestedPresentationDelay): the objects they ask for were
/// the newest when the node read the MPD some reads before, so listings are kept, the
/// oldest forgotten first past `limit`.
final class LiveRepresentations: Sendable {
    private struct State {
        var representationOf: [String: (representation: String, listing: UInt64)] = [:]
        var listings: UInt64 = 0
        var played: [String: ContinuousClock.Instant] = [:]
    }

    private let state = Mutex(State())
    static let playedWithin: Duration = .seconds(60)
    /// Objects remembered, and Representations, at most.
    static let limit = 8192

    /// `objectIDs` belong to `representation`.
    func listed(_ objectIDs: [String], of representation: String) {
        state.withLock { s in
            s.listings += 1
            for id in objectIDs { s.representationOf[id] = (representation, s.listings) }
            if s.representationOf.count > Self.limit {
                // The older half of the listings since the oldest kept.
                let oldest = s.representationOf.values.lazy.map(\.listing).min() ?? 0
                let cut = oldest + (s.listings - oldest) / 2
                s.representationOf = s.representationOf.filter { $0.value.listing > cut }
            }
        }
    }

    /// A player asked for object `objectID`.
    func requested(_ objectID: String) {
        let now = ContinuousClock.now
        state.withLock { s in
            guard let representation = s.representationOf[objectID]?.representation else { return }
            s.played.keepUnder(Self.limit) { now - $0 < Self.playedWithin }
            s.played[representation] = now
        }
    }

    func isPlayed(_ representation: String) -> Bool {
        state.withLock { s in s.played[representation].map { ContinuousClock.now - $0 < Self.playedWithin } ?? false }
    }
}
