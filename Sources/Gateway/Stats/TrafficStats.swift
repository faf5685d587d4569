import Prometheus
import Swarm
import Synchronization

/// Bytes by where they came from, in total and per stream (xresid), for `/stat` and
/// `/metrics`. Requests are counted by route template, never by raw path, so that the metric's
/// labels stay few.
public final class TrafficStats: Sendable {
    /// One stream's (or the total's) byte counts.
    public struct Totals: Sendable, Equatable {
        public var cdnBytes: Int64 = 0
        public var p2pBytes: Int64 = 0
        public var cacheBytes: Int64 = 0
        public var uploadBytes: Int64 = 0
        /// Bytes this node's registry fetched from origins to prepare objects (their checksums
        /// and the swarm's first copy): CDN traffic that no player received from this node.
        public var prepareBytes: Int64 = 0
        public var peers: Int = 0

        /// Share of delivered bytes that did not come from the CDN.
        public var p2pRatio: Double {
            let delivered = cdnBytes + p2pBytes + cacheBytes
            return delivered == 0 ? 0 : Double(p2pBytes + cacheBytes) / Double(delivered)
        }
    }

    /// Where delivered bytes came from.
    public enum Source: String, Sendable { case cdn, p2p, cache }

    /// Why bytes came from the CDN rather than from the swarm: a piece the peers did not
    /// deliver (`SwarmNode.FallbackReason`), or a player sent to the origin by a 302 while the
    /// object's checksums were not ready.
    public enum FallbackReason: String, Sendable, CaseIterable {
        case trackerAway = "tracker_away", noPeers = "no_peers", peersFailed = "peers_failed", deadline
        case checksumsNotReady = "checksums_not_ready"
        /// The origin's copy changed since its checksums were made: the player is sent there
        /// while it is prepared again.
        case originChanged = "origin_changed"
    }

    /// Streams whose counts are kept (`/stat?xresid=`), the ones counted last.
    public static let maxStreams = 100_000

    struct Stream {
        var totals = Totals()
        /// Peers that delivered pieces of the stream.
        var peers: Set<String> = []
    }

    struct State {
        /// Changes the counts of stream `xresid`, kept as counted last.
        mutating func stream(_ xresid: String, _ change: (inout Stream) -> Void) {
            streams.update(xresid, make: { Stream() }, change)
            streams.dropLetGo()
        }

        var total = Totals()
        /// Per stream, the ones counted last: every xresid ever seen was kept for good, and a
        /// client can make up as many as it likes.
        var streams = RecentTable<Stream>(capacity: TrafficStats.maxStreams)
        /// Peers that delivered pieces, in all.
        var allPeers: Set<String> = []
        var fallbacks: [FallbackReason: Int] = [:]
        var badPieces = 0
        /// The piece store's count of disk shortages at the last scrape.
        var diskShortages = 0
    }

    private let state = Mutex(State())
    private let fallbackCounters: [FallbackReason: Counter]
    public let registry: PrometheusCollectorRegistry
    private let bytes: [Source: Counter]
    private let pieceFailures: Counter
    private let uploaded: Counter
    private let prepared: Counter

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var bytes: [Source: Counter] = [:]
        for s in [Source.cdn, .p2p, .cache] {
            bytes[s] = registry.makeCounter(
                descriptor: Self.descriptor("bytes", unit: "total", "Bytes delivered to clients, by source."),
                labels: [("source", s.rawValue)])
        }
        self.bytes = bytes
        uploaded = registry.makeCounter(
            descriptor: Self.descriptor("upload_bytes", unit: "total", "Bytes of pieces sent to other nodes."))
        prepared = registry.makeCounter(
            descriptor: Self.descriptor("prepare_bytes", unit: "total", "Bytes fetched from origins to prepare objects (checksums and the first copy)."))
        pieceFailures = registry.makeCounter(
            descriptor: Self.descriptor("piece_failures", unit: "total", "Pieces that failed verification."))
        var fallbacks: [FallbackReason: Counter] = [:]
        for r in FallbackReason.allCases {
            fallbacks[r] = registry.makeCounter(
                descriptor: Self.descriptor("cdn_fallbacks", unit: "total", "Pieces or objects that came from the CDN instead of the swarm, by reason."),
                labels: [("reason", r.rawValue)])
        }
        fallbackCounters = fallbacks
        peersGauge = registry.makeGauge(
            descriptor: Self.descriptor("peers", unit: "", "Distinct peers that delivered pieces to this node."))
        storeBytes = registry.makeGauge(
            descriptor: Self.descriptor("piece_store", unit: "bytes", "Disk blocks of the pieces the store holds (kept under --cache-size)."))
        diskShortages = registry.makeCounter(
            descriptor: Self.descriptor(
                "piece_store_disk_short", unit: "total",
                "Pieces that found the cache's disk short of room before the bound: objects were evicted for them, or they were not kept."))
        liveHolds = registry.makeCounter(
            descriptor: Self.descriptor("live_holds", unit: "total", "Live playlists' and MPDs' answers held for their new segments to be ready."))
        liveHoldMilliseconds = registry.makeCounter(
            descriptor: Self.descriptor("live_hold_milliseconds", unit: "total", "Milliseconds those answers were held, summed."))
        skippedReadAhead = registry.makeCounter(
            descriptor: Self.descriptor(
                "read_ahead_skipped", unit: "total",
                "VOD playlists and MPDs read while too many lists waited to be planned for read-ahead: not planned until read again."))
    }

    private let peersGauge: Gauge
    private let storeBytes: Gauge
    private let diskShortages: Counter
    private let liveHolds: Counter
    private let liveHoldMilliseconds: Counter
    private let skippedReadAhead: Counter
    private let trackerGauges = Mutex<(sessions: Gauge, announced: Gauge, banned: Gauge)?>(nil)

    /// A VOD list was read while too many waited to be planned for read-ahead, and was not.
    public func countSkippedReadAhead() { skippedReadAhead.increment() }

    /// A live playlist's or MPD's answer was held `held` for its new segments.
    public func noteLiveHold(_ held: Duration) {
        liveHolds.increment()
        liveHoldMilliseconds.increment(by: max(0, held.milliseconds))
    }

    /// The figures of the tracker this process runs, read as `/metrics` is scraped: their
    /// gauges exist only in a process that runs one.
    public func observeTracker(sessions: Int, announcedObjects: Int, bannedPeers: Int) {
        let gauges = trackerGauges.withLock { g in
            if g == nil {
                g = (registry.makeGauge(descriptor: Self.descriptor("tracker_sessions", unit: "", "Nodes logged in to this process's tracker.")),
                     registry.makeGauge(descriptor: Self.descriptor(
                        "tracker_announced_objects", unit: "",
                        "Objects the nodes logged in to this process's tracker announced, summed over nodes (bounded).")),
                     registry.makeGauge(descriptor: Self.descriptor(
                        "tracker_banned_peers", unit: "", "Peer URLs this process's tracker bans now, for bad pieces its audits proved (GET /bans).")))
            }
            return g!
        }
        gauges.sessions.set(Double(sessions))
        gauges.announced.set(Double(announcedObjects))
        gauges.banned.set(Double(bannedPeers))
    }

    /// The piece store's figures, read as `/metrics` is scraped.
    public func observeStore(bytes: Int64, diskShortages total: Int) {
        storeBytes.set(Double(bytes))
        let new = state.withLock { s -> Int in
            defer { s.diskShortages = max(s.diskShortages, total) }
            return total - s.diskShortages
        }
        if new > 0 { diskShortages.increment(by: Int64(new)) }
    }

    /// A piece (or a whole object, for `checksumsNotReady`) that came from the CDN, and why.
    public func countFallback(_ reason: FallbackReason) {
        fallbackCounters[reason]?.increment()
        state.withLock { $0.fallbacks[reason, default: 0] += 1 }
    }

    /// `peer` delivered bytes of stream `xresid`.
    public func notePeer(_ peer: String, xresid: String) {
        let count = state.withLock { s -> Int? in
            var new = false
            s.stream(xresid) { stream in
                new = stream.peers.insert(peer).inserted
                stream.totals.peers = stream.peers.count
            }
            guard new else { return nil }
            guard s.allPeers.insert(peer).inserted else { return nil }
            s.total.peers = s.allPeers.count
            return s.allPeers.count
        }
        if let count { peersGauge.set(Double(count)) }
    }

    public var fallbacks: [FallbackReason: Int] { state.withLock { $0.fallbacks } }
    public var badPieces: Int { state.withLock { $0.badPieces } }

    public func add(_ count: Int, from source: Source, xresid: String) {
        guard count > 0 else { return }
        bytes[source]?.increment(by: Int64(count))
        state.withLock { s in
            func bump(_ t: inout Totals) {
                switch source {
                case .cdn: t.cdnBytes += Int64(count)
                case .p2p: t.p2pBytes += Int64(count)
                case .cache: t.cacheBytes += Int64(count)
                }
            }
            bump(&s.total)
            s.stream(xresid) { bump(&$0.totals) }
        }
    }

    /// Bytes of pieces sent to other nodes.
    public func addUpload(_ count: Int, xresid: String) {
        add(count, to: uploaded, \.uploadBytes, xresid: xresid)
    }

    /// Bytes of stream `xresid` fetched from its origin to prepare an object.
    public func addPrepared(_ count: Int, xresid: String) {
        add(count, to: prepared, \.prepareBytes, xresid: xresid)
    }

    private func add(_ count: Int, to counter: Counter, _ field: WritableKeyPath<Totals, Int64>, xresid: String) {
        guard count > 0 else { return }
        counter.increment(by: Int64(count))
        state.withLock { s in
            s.total[keyPath: field] += Int64(count)
            s.stream(xresid) { $0.totals[keyPath: field] += Int64(count) }
        }
    }

    /// A piece that failed SHA-256 verification (on disk, from the origin, later from a peer).
    public func countPieceFailure() {
        pieceFailures.increment()
        state.withLock { $0.badPieces += 1 }
    }

    public func countRequest(route: String, status: Int) {
        registry.makeCounter(
            descriptor: Self.descriptor("requests", unit: "total", "HTTP requests answered, by route template and status."),
            labels: [("route", route), ("status", String(status))]
        ).increment()
    }

    static func descriptor(_ name: String, unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "swarmgate", metricName: name, unitName: unit, helpText: help)
    }

    public var total: Totals { state.withLock { $0.total } }

    public func stream(_ xresid: String) -> Totals? { state.withLock { $0.streams.peek(xresid)?.totals } }


    public func prometheusText() -> [UInt8] { registry.emitToBuffer() }
}
