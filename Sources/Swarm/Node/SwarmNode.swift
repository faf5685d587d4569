import Foundation
import Logging
import Origin
import PieceStore
import Synchronization

/// A node's side of the swarm, as the gateway uses it: the piece store, the checksum registry
/// (the node's own when it runs the tracker, else a copy of what the tracker's registry
/// answered), the prepare queue, and the filling of missing pieces of ready objects — from
/// peers while they deliver within the deadline, else from the origin by range. One fetch per
/// missing piece however many requests want it, and every byte verified before it is used.
public final class SwarmNode: Sendable {
    public let store: PieceStore
    public let registry: ChecksumRegistry
    public let prepareQueue: PrepareQueue
    /// Where the tracker this node runs (without `--tracker`) keeps login nonces and the
    /// peers' offences and bans: the registry's file, so that a restart forgets none of them.
    public let trackerRecords: any NonceLog & OffenceLog
    /// How far ahead of a playlist's players its objects are prepared (when this node's
    /// registry prepares them: it runs no `link`, or it is the tracker's).
    public let readAhead: ReadAheadWindow
    let origin: OriginClient
    /// Pieces from other nodes: any address (the tracker names them), one try, no redirects.
    let peerClient: OriginClient
    /// How long the swarm may take to deliver a piece before the origin is asked, unless a
    /// request says otherwise (and for prefetching).
    public let peerDeadline: Duration
    /// How old a copy may be (since it was prepared, or last found the same as the origin's)
    /// before a request for it has it checked against the origin; nil: never.
    public let revalidateAfter: Duration?
    /// Objects whose copies are being checked (`revalidateIfDue`), or could not be lately: not
    /// again before then.
    let revalidating = Mutex<[String: ContinuousClock.Instant]>([:])
    let onBadPiece: @Sendable () -> Void
    let onFallback: @Sendable (FallbackReason) -> Void
    /// Requests for a missing piece, to the tracker and to peers, one at a time per piece (or
    /// object): a player's request joins one already under way, a prefetch's included.
    private let pieceFlights = SingleFlight<Result<[UInt8], PieceFailure>>()
    /// Rechecks under way, and when each object was last checked for a node that said its
    /// origin copy changed.
    let rechecks = Mutex<(running: Int, waiting: [CheckedContinuation<Void, Never>], last: [String: ContinuousClock.Instant])>((0, [], [:]))
    /// Copies of objects this node doubts, by object id: their live playlist started over
    /// (`doubt`), and may list new objects under the old names. The checksums fingerprint in
    /// doubt (nil: any copy the tracker names), until when.
    let doubts = Mutex<[String: (copy: String?, until: ContinuousClock.Instant)]>([:])
    private let checksumFlights = SingleFlight<ChecksumAnswer>()
    /// Objects the tracker's registry found to be playlists or MPDs (a media path's), and
    /// until when that answer stands here: their requests (a live one's reloads, by every
    /// player) do not each cost the tracker a message. A minute: the registry holds its answer
    /// ten, from a moment this node does not know, so this adds a minute at most.
    private let manifests = Mutex<[String: (answer: ChecksumAnswer, until: ContinuousClock.Instant)]>([:])
    static let maxManifests = 10_000
    static let manifestMemory: Duration = .seconds(60)
    let wantFlights = SingleFlight<[SwarmPeer]>()
    let peerFlights = SingleFlight<PeerOutcome>()
    let swarm = Mutex(SwarmState())
    /// Pieces this node fetched, or its registry prepared, whose bytes no player has been
    /// sent yet, with where they came from: a peer, whose bytes count as the swarm's when the
    /// first player gets them, or the origin, whose bytes count as the CDN's.
    public let fetched: FetchedPieces
    /// Origin bodies being read whole for their pieces, by object id, with the copy they are
    /// checked against;
    /// also the first piece request to an origin seen to ignore ranges, which the object's
    /// other piece fetches wait for.
    let wholeReads = Mutex<[String: (read: WholeBodyRead, checksums: PieceChecksums)]>([:])
    /// Whole-body reads waiting for their players now (`maxPausedReads`).
    let pausedReads = Atomic<Int>(0)
    /// Origins (scheme and authority) that answered a piece's range with the whole body, and
    /// not with a 206 since: an object's first piece request to one goes alone. Others are
    /// asked for pieces at once (an origin that honors ranges pays no wait).
    let wholeOrigins = Mutex<Set<String>>([])
    /// Objects being prefetched now.
    private let prefetching = Mutex<Set<String>>([])
    /// Told when this node's registry drops a copy whose origin copy changed.
    let copyDroppedObserver = Mutex<Callback<(ObjectKey, PieceChecksums)>?>(nil)
    let logger: Logger

    struct SwarmState {
        var link: TrackerLink?
        /// Recent answers to wants, by object id.
        var peerLists: [String: (peers: [SwarmPeer], at: ContinuousClock.Instant)] = [:]
        /// Peers that sent a bad piece of an object ("object peer"): not asked for it again
        /// for `droppedPeerLifetime` (by then the tracker has banned a peer that does it again).
        /// It was never pruned: a node that met bad pieces kept each pair for good.
        var dropped = ExpiringMarks()
        /// Peers that missed the deadline for a piece of an object ("object peer"): not asked
        /// for its other pieces for a while. A response's pieces start a few at a time, each
        /// with the deadline, so one slow holder cost a response the deadline again for each
        /// few pieces. A peer that did not answer at all ("* peer": no response head, or no
        /// connection, within the deadline: a frozen or vanished machine, not a slow disk or
        /// link) is not asked for any object meanwhile: the tracker names it until its session
        /// goes silent (30 s and more), and each new object paid the deadline for it.
        var slow = ExpiringMarks()
        /// Objects whose holders the tracker was asked for (a `want`) and did not name within
        /// a piece's deadline: their other pieces skip the peers rather than wait the
        /// deadline again each, until the answer comes or the want's own timeout passes.
        var wantLate = ExpiringMarks()
    }

    /// Keys marked until a moment; past `bound` of them, the expired ones are dropped.
    struct ExpiringMarks {
        private var until: [String: ContinuousClock.Instant] = [:]
        var bound = 4096

        /// Marks kept, expired ones included until the next pruning.
        var count: Int { until.count }

        func contains(_ key: String, now: ContinuousClock.Instant = .now) -> Bool { until[key].map { now < $0 } ?? false }

        mutating func mark(_ key: String, for duration: Duration, now: ContinuousClock.Instant = .now) {
            until[key] = now + duration
            if until.count > bound { until = until.filter { now < $0.value } }
        }

        mutating func clear(_ key: String) { until[key] = nil }
    }

    /// Why a piece came from the origin rather than from a peer.
    public enum FallbackReason: String, Sendable, CaseIterable {
        /// Not logged in to a tracker (it is away, or the node runs its own).
        case trackerAway = "tracker_away"
        /// No other node holds the object.
        case noPeers = "no_peers"
        /// Every peer asked failed (refused, did not hold the piece, sent a bad piece, broke off).
        case peersFailed = "peers_failed"
        /// The peers did not deliver within the deadline.
        case deadline
    }

    /// Why a piece could be had neither from peers nor from the origin.
    public enum PieceFailure: Error, Sendable, CustomStringConvertible {
        /// The origin's copy no longer matches the registry's checksums: they are dropped
        /// and the object is prepared again.
        case originChanged(String)
        /// The origin answered this status to the piece's range.
        case originStatus(Int, String)
        /// The origin could not be fetched from.
        case origin(OriginError)

        public var description: String {
            switch self {
            case .originChanged(let message), .originStatus(_, let message): message
            case .origin(let error): error.description
            }
        }
    }

    /// Where a piece this node fetched came from.
    public enum FetchSource: Sendable, Equatable {
        case peer(String)
        case origin
    }

    /// How long a want's answer is reused for further pieces of the object.
    static let peerListLifetime: Duration = .seconds(2)
    /// How long a peer that missed a piece's deadline is not asked for the object's other pieces.
    static let slowPeerLifetime: Duration = .seconds(10)
    /// How long a peer that sent a bad piece of an object is not asked for it again.
    static let droppedPeerLifetime: Duration = .seconds(3600)

    /// Opens the piece store in `cacheDirectory` and the registry in `registryPath`.
    public init(
        cacheDirectory: String, cacheSize: Int64, registryPath: String, pieceSize: Int, maxPrepareJobs: Int, registryEntries: Int = 1_000_000,
        maxObjectSize: Int64, origin: OriginClient, peerDeadline: Duration = .milliseconds(1500),
        readAhead: Duration? = .seconds(60), revalidateAfter: Duration? = .seconds(600), logger: Logger,
        onBadPiece: @escaping @Sendable () -> Void = {}, onFallback: @escaping @Sendable (FallbackReason) -> Void = { _ in },
        onPrepareBytes: @escaping @Sendable (ObjectKey, Int) -> Void = { _, _ in }
    ) throws(SwarmError) {
        let fetched = FetchedPieces()
        self.fetched = fetched
        do {
            store = try PieceStore(directory: cacheDirectory, capacity: cacheSize, logger: logger, onCorruptPiece: onBadPiece)
        } catch {
            throw SwarmError("piece store: \(error)")
        }
        let storage: SQLiteRegistryStorage
        do {
            storage = try SQLiteRegistryStorage(path: registryPath)
            trackerRecords = storage
            // Pieces are served only against the registry's checksums: without them they are
            // dead weight in the store, and an announced holder that cannot serve.
            registry = try ChecksumRegistry(storage: storage, capacity: registryEntries, logger: logger) { [store] keys in store.remove(keys) }
            prepareQueue = try PrepareQueue(
                registry: registry, storage: storage,
                preparer: Preparer(
                    origin: origin, store: store, maxObjectSize: maxObjectSize, logger: logger, onOriginBytes: onPrepareBytes,
                    // A prepared piece a player gets from this node came from the origin once.
                    onPieceKept: { key, index, bytes in fetched.note(key, index, from: .origin, bytes: bytes) }),
                pieceSize: pieceSize, maxRunning: maxPrepareJobs, logger: logger)
        } catch {
            throw SwarmError("registry: \(error)")
        }
        // Pieces of objects the registry does not hold (its file replaced, or written by a
        // node stopped between a removal's two steps) could be neither served nor kept
        // track of, only announced: removed now, but those a queued job goes on with.
        var unusable: [ObjectKey] = []
        for id in store.heldObjects() {
            guard let key = store.info(id: id)?.key, !registry.holds(key),
                prepareQueue.job(id.prefixID).map({ $0.state.isFinished }) ?? true
            else { continue }
            unusable.append(key)
        }
        if !unusable.isEmpty {
            logger.info("pieces of objects the registry does not hold removed", metadata: ["objects": "\(unusable.count)"])
            store.remove(unusable)
        }
        self.origin = origin
        // The playlists read ahead are kept beside the jobs: after a restart, players who read
        // a playlist before it (VOD players read it once) still move the window on.
        let writes = ReadAheadWrites(storage: storage, failures: RepeatedFailureLog("cannot keep the read-ahead playlists", logger: logger))
        self.readAhead = ReadAheadWindow(ahead: readAhead) { planned, dropped in writes.record(planned, dropped: dropped) }
        do { self.readAhead.restore(try storage.loadPlaylists()) } catch {
            logger.warning("cannot read the read-ahead playlists", metadata: ["error": "\(error)"])
        }
        var peers = OriginClient.Configuration()
        peers.addressPolicy = .peers
        peers.retries = 0
        peers.maxRedirects = 0
        peers.httpVersion = .http1_1
        peers.connectTimeout = .seconds(1)
        peers.maxConcurrentPerHost = 16
        peers.bodyBufferSize = 1 << 20
        peerClient = OriginClient(configuration: peers)
        self.peerDeadline = peerDeadline
        self.revalidateAfter = revalidateAfter
        self.onBadPiece = onBadPiece
        self.onFallback = onFallback
        self.logger = logger
    }

    // MARK: the tracker

    /// Joins the swarm through `link`: checksums come from the tracker's registry, read-ahead
    /// is prepared there, pieces come from peers, and what the store keeps or loses is
    /// announced (all of it again at each login).
    public func attach(_ link: TrackerLink) {
        swarm.withLock { s in
            s.link = link
        }
        link.onReady { [weak self] ready in self?.told(ready) }
        link.onDropped { [weak self] id, copy in self?.dropCopy(id, copy: copy) }
        let announcements = Announcements(link: link)
        store.observe { change in
            switch change {
            case .held(let id): announcements.add(held: true, [id])
            case .gone(let ids): announcements.add(held: false, ids)
            }
        }
    }

    /// The tracker this node logs in to; nil: it runs its own.
    public var link: TrackerLink? { swarm.withLock { $0.link } }

    /// What a media request may be served from.
    public enum Resolution: Sendable {
        /// Checksums known: serve from pieces.
        case ready(RegistryEntry, PieceChecksums)
        /// Not ready: the registry's answer says whether the player goes to the origin.
        case notReady(ChecksumAnswer)
    }

    /// The checksums of `key`: from this node's registry, else from the tracker's (kept here
    /// for next time), else the node's own registry prepares it. A player is waiting; not
    /// ready, the answer waits up to `wait` for the origin's first answer to the preparation
    /// (`.zero`: it comes at once, and the player goes to the origin), and then up to
    /// `readyWithin` (from the call) for a preparation under way that its progress says will
    /// end by then (`.zero`: not at all).
    public func resolve(_ key: ObjectKey, url: String, wait: Duration, readyWithin: Duration = .zero) async -> Resolution {
        if let ready = resolveNow(key, url: url) { return ready }
        return await resolveLater(key, url: url, wait: wait, readyWithin: readyWithin)
    }

    /// `resolve`'s answer when it comes at once (the checksums are known here: a cache hit),
    /// else nil, and `resolveLater` gives it.
    public func resolveNow(_ key: ObjectKey, url: String) -> Resolution? {
        if link == nil { reached([key.id]) }
        guard let ready = registry.ready(key) else { return nil }
        revalidateIfDue(ready.entry, url: url)
        return .ready(ready.entry, ready.checksums)
    }

    /// `resolve`'s answer after `resolveNow` had none: from the tracker, or the node's own
    /// registry, which may wait for the origin.
    public func resolveLater(_ key: ObjectKey, url: String, wait: Duration, readyWithin: Duration = .zero) async -> Resolution {
        let link = link
        let answer: ChecksumAnswer
        if let link {
            let now = ContinuousClock.now
            if let known = manifests.withLock({ $0[key.id] }), now < known.until { return .notReady(known.answer) }
            answer = await trackerChecksums(ObjectRef(key: key, url: url), urgent: true, waitForOrigin: wait > .zero, readyWithin: readyWithin, link: link)
            if let ready = registry.ready(key) { return .ready(ready.entry, ready.checksums) }
            if answer.manifestFormat != nil {
                manifests.withLock { m in
                    m.keepUnder(Self.maxManifests) { now < $0.until }
                    m[key.id] = (answer, now + Self.manifestMemory)
                }
            }
        } else {
            answer = await checksums(ObjectRef(key: key, url: url), urgent: true, wait: wait, readyWithin: readyWithin)
            if answer.state == .ready, let ready = registry.ready(key) { return .ready(ready.entry, ready.checksums) }
        }
        return .notReady(answer)
    }

    /// The tracker's registry's answer for `ref`, kept in this node's registry when ready, with
    /// the holders it names kept for fetching the pieces. Concurrent requests for one object
    /// (alike in waits) share one round trip. `ifReady` (a prefetch): only checksums ready now;
    /// the tracker neither prepares the object nor counts it as reached.
    func trackerChecksums(
        _ ref: ObjectRef, urgent: Bool, waitForOrigin: Bool, readyWithin: Duration = .zero, ifReady: Bool = false, link: TrackerLink
    ) async -> ChecksumAnswer {
        let key = ref.key
        // Only requests alike in their waits share a round trip (one that may wait longer
        // must not end with a shorter one's answer).
        let readyKey = readyWithin > .zero ? "r\(readyWithin.milliseconds)" : ""
        return await checksumFlights.run(key.id + (waitForOrigin ? "w" : "") + readyKey + (ifReady ? "p" : "")) {
            let (answer, peers) = await link.checksums(ref, urgent: urgent, waitForOrigin: waitForOrigin, readyWithin: readyWithin, ifReady: ifReady)
            if let checksums = answer.checksums {
                // A copy in doubt is not served until the registry has checked it: the player
                // goes to the origin meanwhile.
                if self.doubted(key.id, checksums.fingerprint) {
                    return ChecksumAnswer(state: .preparing, reason: "the copy is being checked against the origin")
                }
                self.registry.markReady(key, checksums: checksums, etag: answer.etag, lastModified: answer.lastModified, contentType: answer.contentType)
                // A doubt that came meanwhile found nothing to drop yet.
                if self.undoubted([(key, checksums)]).isEmpty {
                    return ChecksumAnswer(state: .preparing, reason: "the copy is being checked against the origin")
                }
                self.keepPeerList(key, peers)
            }
            return answer
        }
    }

    /// This node's registry's answer for `ref`: its checksums when ready, else the object is
    /// queued and the origin's first answer (within `wait`) says whether the player can be sent
    /// there meanwhile. With `readyWithin`, an object whose preparation is under way (the
    /// origin has it) and that its progress says will be ready within that time (from the
    /// call) is waited for, and its checksums are the answer.
    public func checksums(_ ref: ObjectRef, urgent: Bool, wait: Duration, readyWithin: Duration = .zero) async -> ChecksumAnswer {
        let key = ref.key
        let asked = ContinuousClock.now
        if let ready = registry.ready(key) {
            revalidateIfDue(ready.entry, url: ref.url)
            return ChecksumAnswer(ready: ready.entry, checksums: ready.checksums)
        }
        prepareQueue.enqueue(key, url: ref.url, urgent: urgent)
        var head = await prepareQueue.head(key, timeout: wait)
        if wait == .zero, let failed = head, failed.isOriginFailure {
            // An object asked for without waiting (a playlist lists it) goes to the origin,
            // whatever a recent run heard (held back from running again for a moment): a
            // segment late at a CDN edge is there for the player by now.
            head = nil
        }
        switch head {
        case .available?, nil:
            let left = readyWithin - (ContinuousClock.now - asked)
            guard left > .zero else { break }
            await prepareQueue.ended(key, within: left)
            if let ready = registry.readyAnswer(key) { return ready }
            // Not in time. An object asked for without waiting on the origin (a playlist listed
            // it) goes to the origin as it would have at once; another gets what the origin said.
            return ChecksumAnswer(head: wait > .zero ? await prepareQueue.head(key, timeout: .zero) : nil)
        default:
            break
        }
        // Not ready when asked: the answer is the origin's head even if the preparation has
        // finished meanwhile (the player goes to the origin once; the next request is served).
        return ChecksumAnswer(head: head)
    }

    /// Whether objects asked for now would be prepared: false while the tracker is away
    /// (a `whole` prepare is then dropped).
    public var preparesNow: Bool { link?.isConnected ?? true }

    /// Queues a playlist's objects for preparation ahead of players, in order: at the
    /// tracker's registry when the node has one, else here. Read-ahead prepares those within
    /// the registry's window ahead of the objects players reach (`readAhead`); `whole`
    /// prepares every one now (an operator's `swarmgate prepare`).
    ///
    /// Returns those of `refs` that this node's registry prepares or has prepared for read-ahead
    /// (all of them when `whole`; none when the tracker's registry does the work).
    /// `retry` (an operator's prepare, on the tracker for a node's): what failed or was
    /// cancelled is queued again.
    @discardableResult
    public func prepareAhead(_ refs: [ObjectRef], whole: Bool = false, retry: Bool = false) -> [ObjectRef] {
        if let link {
            Task { await link.prepare(refs, whole: whole) }
            return []
        }
        let due = whole ? refs : readAhead.plan(refs)
        if !due.isEmpty { prepareQueue.enqueue(due.map { ($0.key, $0.url) }, urgent: false, retry: retry) }
        return whole ? refs : readAhead.handedOut(refs)
    }

    /// An operator's prepare (`swarmgate prepare`): every one of `refs` now, and what failed
    /// or was cancelled again; at the tracker's registry when the node has one, once the
    /// tracker has queued them. Returns why they were not taken (the tracker away, busy or
    /// silent); nil once they are queued.
    public func prepareWhole(_ refs: [ObjectRef]) async -> String? {
        guard !refs.isEmpty else { return nil }
        if let link { return await link.prepareQueued(refs) }
        prepareAhead(refs, whole: true, retry: true)
        return nil
    }

    /// Players reached these objects (this node's, or the swarm's as nodes ask for them and
    /// announce them): the read-ahead window of their playlists moves on. Returns the objects
    /// it brings in, which are queued in the background (queuing writes the registry); those of
    /// no playlist known yet wait for its plan if `remember`.
    @discardableResult
    public func reached(_ ids: [String], remember: Bool = true) -> [ObjectRef] {
        // Played: the registry keeps them (a node holding an object's checksums asks no more).
        registry.touch(ids)
        let due = readAhead.reached(ids, remember: remember)
        guard !due.isEmpty else { return [] }
        let queue = prepareQueue
        Task.detached(priority: .utility) { queue.enqueue(due.map { ($0.key, $0.url) }, urgent: false) }
        return due
    }

    /// The tracker's registry made ready objects this node asked it to prepare: their
    /// checksums (written in one transaction) and holders are kept, so that the first request
    /// of each needs no round trip.
    func told(_ ready: [(ref: ObjectRef, answer: ChecksumAnswer, peers: [SwarmPeer])]) {
        // Each answer's digests are parsed once.
        let usable = ready.compactMap { r in
            r.answer.checksums.flatMap { checksums in
                doubted(r.ref.key.id, checksums.fingerprint) ? nil
                    : (entry: ChecksumRegistry.Ready(key: r.ref.key, checksums: checksums, etag: r.answer.etag, lastModified: r.answer.lastModified, contentType: r.answer.contentType), peers: r.peers)
            }
        }
        registry.markReady(usable.map(\.entry))
        let kept = Set(undoubted(usable.map { ($0.entry.key, $0.entry.checksums) }))
        for u in usable where kept.contains(u.entry.key.id) { keepPeerList(u.entry.key, u.peers) }
    }

    /// The ids of `marked` (copies just marked ready) not in doubt; a copy a doubt reached
    /// between its check and its marking (`doubt` found nothing to drop then) is dropped.
    func undoubted(_ marked: [(key: ObjectKey, checksums: PieceChecksums)]) -> [String] {
        marked.compactMap { m in
            guard doubted(m.key.id, m.checksums.fingerprint) else { return m.key.id }
            _ = registry.drop(m.key, ifCopy: m.checksums)
            return nil
        }
    }

    // MARK: missing pieces

    /// The key of a piece's shared fetch: the object, the piece, and the checksum it is checked
    /// against. A request that holds new checksums (the origin's copy changed) never joins a
    /// fetch begun against the old ones, whose failure would cut its response short.
    static func flightKey(_ key: ObjectKey, _ index: Int, _ checksums: PieceChecksums) -> String {
        key.id + "#\(index)#" + checksums.digests[index].short
    }

    /// Piece `index` of a ready object when the store does not hold it: from peers within the
    /// deadline, else from `url` by range; verified against the registry's checksum, kept,
    /// returned. Concurrent calls for one piece (against the same checksum) share one fetch.
    /// Where it came from is noted for the first player served it (`fetched`), whichever
    /// of the calls that is: the one that began the fetch may never send it (its player left).
    public func obtain(_ key: ObjectKey, _ index: Int, checksums: PieceChecksums, url: String, deadline: Duration? = nil) async throws(PieceFailure) -> [UInt8] {
        try await pieceFlights.run(Self.flightKey(key, index, checksums)) {
            // The origin's whole body is being read for another piece, and reaches this one
            // soon: it comes with it (a probe, or a read far short of it, leaves the peers
            // asked first).
            if let read = self.runningRead(key, checksums), read.reaches(index),
                let got = await self.fromWholeRead(read, key, index, checksums: checksums)
            {
                return got
            }
            switch await self.fromPeers(key, index, checksums: checksums, deadline: deadline ?? self.peerDeadline) {
            case .piece(let piece):
                return .success(piece)
            case .held:
                if let held = self.heldPiece(key, index, checksums: checksums) { return .success(held) }
            case .none(let reason?):
                self.onFallback(reason)
            case .none(nil):
                break
            }
            do throws(PieceFailure) {
                return .success(try await self.fetchPiece(key, index, checksums: checksums, url: url))
            } catch {
                return .failure(error)
            }
        }.get()
    }

    /// Piece `index` of `key` read from the store (verified there).
    func heldPiece(_ key: ObjectKey, _ index: Int, checksums: PieceChecksums) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: checksums.layout.size(of: index))
        let read = bytes.withUnsafeMutableBytes { store.readPiece(key, index, checksums: checksums, into: $0) }
        return read == nil ? nil : bytes
    }

    // MARK: prefetch

    /// Fetches `refs` (the segments after the one a player reads) from peers in the
    /// background, each within its deadline, so that the player's next requests are cache
    /// hits (a request that comes meanwhile joins the fetch). Peers only, and objects ready
    /// only: what they do not have is left for the player's own request (and the CDN), and
    /// the tracker neither prepares a prefetched object nor counts it as reached (a player's
    /// own requests move the read-ahead window). Objects go one after the
    /// other in playback order, so that the next one a player asks for arrives first and
    /// prefetching never crowds out a player's own request.
    public func prefetch(_ refs: [(ref: ObjectRef, deadline: Duration)]) {
        guard let link, link.isConnected else { return }
        let claimed = prefetching.withLock { p in refs.filter { p.insert($0.ref.key.id).inserted } }
        guard !claimed.isEmpty else { return }
        Task {
            for (ref, deadline) in claimed {
                await self.prefetchObject(ref, deadline: deadline, link: link)
                _ = self.prefetching.withLock { $0.remove(ref.key.id) }
            }
        }
    }

    private func prefetchObject(_ ref: ObjectRef, deadline: Duration, link: TrackerLink) async {
        let key = ref.key
        var checksums = registry.checksums(key)
        if checksums == nil {
            // A ready answer lands in the registry (its digests parsed once, there).
            _ = await trackerChecksums(ref, urgent: false, waitForOrigin: false, ifReady: true, link: link)
            checksums = registry.checksums(key)
        }
        guard let checksums else { return }
        // Every missing piece at once, as a player's response asks for them.
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<checksums.layout.count where !store.has(key, piece: index) {
                group.addTask { _ = await self.fromPeers(key, index, checksums: checksums, deadline: deadline) }
            }
        }
    }
}
