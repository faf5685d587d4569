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
    /// Where the tracker this node runs (without `--tracker`) keeps login nonces: the
    /// registry's file, so that a restart does not forget them.
    public let loginNonces: any NonceLog
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
    private let revalidating = Mutex<[String: ContinuousClock.Instant]>([:])
    let onBadPiece: @Sendable () -> Void
    let onFallback: @Sendable (FallbackReason) -> Void
    /// Requests for a missing piece, to the tracker and to peers, one at a time per piece (or
    /// object): a player's request joins one already under way, a prefetch's included.
    private let pieceFlights = SingleFlight<Result<[UInt8], PieceFailure>>()
    /// Rechecks under way, and when each object was last checked for a node that said its
    /// origin copy changed.
    private let rechecks = Mutex<(running: Int, waiting: [CheckedContinuation<Void, Never>], last: [String: ContinuousClock.Instant])>((0, [], [:]))
    /// Copies of objects this node doubts, by object id: their live playlist started over
    /// (`doubt`), and may list new objects under the old names. The checksums fingerprint in
    /// doubt (nil: any copy the tracker names), until when.
    private let doubts = Mutex<[String: (copy: String?, until: ContinuousClock.Instant)]>([:])
    private let checksumFlights = SingleFlight<ChecksumAnswer>()
    /// Objects the tracker's registry found to be playlists or MPDs (a media path's), and
    /// until when that answer stands here: their requests (a live one's reloads, by every
    /// player) do not each cost the tracker a message. A minute: the registry holds its answer
    /// ten, from a moment this node does not know, so this adds a minute at most.
    private let manifests = Mutex<[String: (answer: ChecksumAnswer, until: ContinuousClock.Instant)]>([:])
    static let maxManifests = 10_000
    static let manifestMemory: Duration = .seconds(60)
    private let wantFlights = SingleFlight<[SwarmPeer]>()
    private let peerFlights = SingleFlight<PeerOutcome>()
    private let swarm = Mutex(SwarmState())
    /// Pieces this node fetched and no player has been served yet, with where they came from:
    /// a peer, whose bytes count as the swarm's when the first player gets them, or the
    /// origin, whose bytes count as the CDN's (`takeFetched`).
    private let fetched = Mutex<[String: FetchSource]>([:])
    private let fetchedCount = Atomic<Int>(0)
    /// Origin bodies being read whole for their pieces, by object id, with the copy they are
    /// checked against;
    /// also the first piece request to an origin seen to ignore ranges, which the object's
    /// other piece fetches wait for.
    private let wholeReads = Mutex<[String: (read: WholeBodyRead, checksums: PieceChecksums)]>([:])
    /// Whole-body reads waiting for their players now (`maxPausedReads`).
    private let pausedReads = Atomic<Int>(0)
    /// Origins (scheme and authority) that answered a piece's range with the whole body, and
    /// not with a 206 since: an object's first piece request to one goes alone. Others are
    /// asked for pieces at once (an origin that honors ranges pays no wait).
    private let wholeOrigins = Mutex<Set<String>>([])
    /// Objects being prefetched now.
    private let prefetching = Mutex<Set<String>>([])
    /// Told when this node's registry drops a copy whose origin copy changed.
    private let copyDroppedObserver = Mutex<Callback<(ObjectKey, PieceChecksums)>?>(nil)
    private let logger: Logger

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
        /// few pieces.
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
        do {
            store = try PieceStore(directory: cacheDirectory, capacity: cacheSize, logger: logger, onCorruptPiece: onBadPiece)
        } catch {
            throw SwarmError("piece store: \(error)")
        }
        let storage: SQLiteRegistryStorage
        do {
            storage = try SQLiteRegistryStorage(path: registryPath)
            loginNonces = storage
            // Pieces are served only against the registry's checksums: without them they are
            // dead weight in the store, and an announced holder that cannot serve.
            registry = try ChecksumRegistry(storage: storage, capacity: registryEntries, logger: logger) { [store] keys in store.remove(keys) }
            prepareQueue = try PrepareQueue(
                registry: registry, storage: storage,
                preparer: Preparer(origin: origin, store: store, maxObjectSize: maxObjectSize, logger: logger, onOriginBytes: onPrepareBytes),
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
        let link = link
        if link == nil { reached([key.id]) }
        if let ready = registry.ready(key) {
            revalidateIfDue(ready.entry, url: url)
            return .ready(ready.entry, ready.checksums)
        }
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
    private func trackerChecksums(
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
    private func told(_ ready: [(ref: ObjectRef, answer: ChecksumAnswer, peers: [SwarmPeer])]) {
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
    private func undoubted(_ marked: [(key: ObjectKey, checksums: PieceChecksums)]) -> [String] {
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
    /// Where it came from is noted for the first player served it (`takeFetched`), whichever
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
    private func heldPiece(_ key: ObjectKey, _ index: Int, checksums: PieceChecksums) -> [UInt8]? {
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

    /// Notes that this node fetched piece `index` of `key` from `source`, for the first player
    /// served it (before the piece is kept, so that a player reading it from the store at
    /// once sees where it came from). A fetch again (the piece was evicted unserved) notes
    /// its own source. Also what a response whose write of the piece failed gives back.
    public func noteFetched(_ key: ObjectKey, _ index: Int, from source: FetchSource) {
        fetched.withLock { p in
            // The count follows the table under its lock: cleared without it, the count
            // never came back to 0, and every held piece served looked in the table.
            if p.count >= 100_000 {
                fetchedCount.subtract(p.count, ordering: .relaxed)
                p.removeAll()
            }
            if p.updateValue(source, forKey: key.id + "#\(index)") == nil { fetchedCount.add(1, ordering: .relaxed) }
        }
    }

    /// Where piece `index` of `key` came from, if this node fetched it (from a peer, or the
    /// origin) and no player has been served it yet: the first player's bytes of it count as
    /// fetched, every later one's as this node's.
    public func takeFetched(_ key: ObjectKey, _ index: Int) -> FetchSource? {
        guard fetchedCount.load(ordering: .relaxed) > 0 else { return nil }
        return fetched.withLock { p in
            guard let source = p.removeValue(forKey: key.id + "#\(index)") else { return nil }
            fetchedCount.subtract(1, ordering: .relaxed)
            return source
        }
    }

    // MARK: peers

    /// What asking the peers for a piece came to.
    enum PeerOutcome: Sendable {
        case piece([UInt8])
        /// The store holds it already: a fetch for it ended between the caller's look at the
        /// store and this one (a player's and a prefetch's requests race so), and kept it.
        case held
        /// None sent it verified in time: why (nil: this node is not in a swarm).
        case none(FallbackReason?)
    }

    /// Piece `index` of `key` from peers, shared by every request for it meanwhile (a
    /// player's and a prefetch's alike): the first peer that sends it verified within
    /// `deadline`, kept in the store. A request that joins a fetch under way gets that fetch's
    /// deadline (both are the segment's peer deadline, counted from the earlier start).
    private func fromPeers(_ key: ObjectKey, _ index: Int, checksums: PieceChecksums, deadline: Duration) async -> PeerOutcome {
        await peerFlights.run(Self.flightKey(key, index, checksums)) {
            await self.askPeers(key, index, checksums: checksums, deadline: deadline)
        }
    }

    private func askPeers(_ key: ObjectKey, _ index: Int, checksums: PieceChecksums, deadline: Duration) async -> PeerOutcome {
        // A fetch that ended since the caller looked kept the piece before it ended: never
        // take a piece from peers twice.
        if store.has(key, piece: index) { return .held }
        guard let link else { return .none(nil) }
        guard link.isConnected else { return .none(.trackerAway) }
        let started = ContinuousClock.now
        // A tracker slow to name the holders (a want waits up to 2 s) costs the piece its
        // deadline at most; the want goes on, and its answer is kept for the next pieces.
        let peers: [SwarmPeer]
        if let cached = cachedPeers(key) {
            peers = cached
        } else if swarm.withLock({ $0.wantLate.contains(key.id) }) {
            return .none(.deadline)
        } else {
            guard let named = await Self.value(within: deadline, { await self.peerList(key, link: link) }) else {
                swarm.withLock { $0.wantLate.mark(key.id, for: link.configuration.wantTimeout) }
                return .none(.deadline)
            }
            peers = named
        }
        guard !peers.isEmpty else { return .none(.noPeers) }
        let me = link.configuration.peerID.current
        let size = checksums.layout.size(of: index)
        // Pieces of one object spread over its holders. A holder passed over as slow, or
        // one that timed out, makes running out of holders a `deadline` fallback.
        var skippedSlow = false
        for n in 0..<peers.count {
            let peer = peers[(index + n) % peers.count]
            let left = deadline - (ContinuousClock.now - started)
            guard left > .milliseconds(1) else { return .none(.deadline) }
            let (dropped, slow) = swarm.withLock { s in
                (s.dropped.contains(Self.pairKey(key, peer.peerId)), s.slow.contains(Self.pairKey(key, peer.peerId)))
            }
            if dropped { continue }
            if slow {
                skippedSlow = true
                continue
            }
            // `sha`: the piece this node's checksums expect. A holder with another copy of the
            // object (the origin's changed, and one of them has not heard yet) refuses with 409
            // rather than send a piece that would count against it as bad.
            let url = Self.peerPieceURL(peer.url, key.id, index, from: me, token: peer.token, sha: checksums.digests[index].short)
            let request = OriginRequest(url: url, timeouts: .init(connect: min(left, .seconds(1)), idle: left, total: left), maxBodySize: Int64(size))
            var bytes: [UInt8] = []
            do {
                let response = try await peerClient.fetch(request)
                guard response.status == 200 else { continue }
                bytes = try await response.body.collect(upTo: size)
            } catch {
                switch error.code {
                case .tooLarge:
                    // More bytes than the piece: a bad piece, as an audit finds it (it was
                    // only skipped, and the peer asked again first for the next pieces).
                    bytes = []
                case .timeout:
                    // Not a peer that had only what others left of the deadline.
                    if left >= deadline / 2 { swarm.withLock { $0.slow.mark(Self.pairKey(key, peer.peerId), for: Self.slowPeerLifetime) } }
                    // A connection that never completed took its connect timeout (1 s), not
                    // the deadline: the next holder is asked with what is left (a machine
                    // gone cost the piece a CDN fetch with a live holder listed after it).
                    skippedSlow = true
                    continue
                case .busy:
                    // No connection slot to it freed in time (this node's own requests hold
                    // them): busy, not slow.
                    return .none(.deadline)
                default:
                    continue
                }
            }
            guard bytes.withUnsafeBytes({ checksums.matches(index, $0) }) else {
                onBadPiece()
                logger.warning("a peer sent a bad piece; dropped for this object and reported", metadata: ["peer": "\(peer.peerId)", "object": "\(key)", "piece": "\(index)"])
                swarm.withLock { s in
                    s.dropped.mark(Self.pairKey(key, peer.peerId), for: Self.droppedPeerLifetime)
                    s.peerLists[key.id] = nil
                }
                // Not waited for: the report queues behind the link's other messages, and the
                // piece goes on to the next peer meanwhile.
                Task { await link.report(peer.peerId, object: key.id, piece: index) }
                continue
            }
            noteFetched(key, index, from: .peer(peer.peerId))
            keep(key, checksums, index, bytes)
            return .piece(bytes)
        }
        return .none(skippedSlow ? .deadline : .peersFailed)
    }

    /// The key of an object and a peer in the node's marks.
    private static func pairKey(_ key: ObjectKey, _ peer: String) -> String { key.id + " " + peer }

    /// The holders of `key` the tracker named within `peerListLifetime`.
    private func cachedPeers(_ key: ObjectKey) -> [SwarmPeer]? {
        swarm.withLock { $0.peerLists[key.id] }.flatMap { ContinuousClock.now - $0.at < Self.peerListLifetime ? $0.peers : nil }
    }

    /// `work`'s value, or nil once `limit` has passed first. The work is not cancelled (a want
    /// shared by the requests for an object goes on, and its answer is kept).
    static func value<T: Sendable>(within limit: Duration, _ work: @escaping @Sendable () async -> T) async -> T? {
        let first = FirstAnswer<T?>()
        return await withCheckedContinuation { (c: CheckedContinuation<T?, Never>) in
            first.wait(c)
            let timer = Task {
                try? await Task.sleep(for: limit)
                first.answer(nil)
            }
            Task {
                let value = await work()
                timer.cancel()
                first.answer(value)
            }
        }
    }

    /// A continuation resumed by the first of several answers; the others are dropped.
    private final class FirstAnswer<T: Sendable>: Sendable {
        private let waiter = Mutex<CheckedContinuation<T, Never>?>(nil)
        func wait(_ c: CheckedContinuation<T, Never>) { waiter.withLock { $0 = c } }
        func answer(_ value: T) {
            waiter.withLock { w in
                defer { w = nil }
                return w
            }?.resume(returning: value)
        }
    }

    /// The holders of `key` the tracker named lately, else asked now (one want at a time per object).
    private func peerList(_ key: ObjectKey, link: TrackerLink) async -> [SwarmPeer] {
        if let cached = cachedPeers(key) { return cached }
        return await wantFlights.run(key.id) {
            let peers = await link.want(key.id)
            return self.keepPeerList(key, peers)
        }
    }

    /// Keeps the holders of `key` the tracker named (less those dropped for it); returns them.
    @discardableResult
    private func keepPeerList(_ key: ObjectKey, _ peers: [SwarmPeer]) -> [SwarmPeer] {
        let now = ContinuousClock.now
        return swarm.withLock { s in
            let usable = peers.filter { !s.dropped.contains(Self.pairKey(key, $0.peerId), now: now) }
            s.peerLists[key.id] = (usable, now)
            s.wantLate.clear(key.id)
            if s.peerLists.count > 4096 { s.peerLists = s.peerLists.filter { now - $0.value.at < Self.peerListLifetime } }
            return usable
        }
    }

    /// Where piece `index` of object `objectID` is asked of the peer at `base`, for peer `from`
    /// with the tracker's `token`, expecting the piece whose SHA-256 starts with `sha`.
    public static func peerPieceURL(_ base: String, _ objectID: String, _ index: Int, from: String, token: String, sha: String) -> String {
        "\(base)/peer/v1/\(objectID)/\(index)?from=\(queryEscaped(from))&token=\(queryEscaped(token))&sha=\(sha)"
    }

    static func queryEscaped(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? s
    }

    private func keep(_ key: ObjectKey, _ checksums: PieceChecksums, _ index: Int, _ bytes: [UInt8]) {
        // Not against another copy the registry holds now: a fetch begun against a copy
        // dropped since (the origin's changed) still hands its response the piece it verified,
        // but must not store it over the new copy (one of another length wiped the new copy's
        // pieces). With no copy ready it is kept: a node's entry is dropped for revalidation
        // (`revalidateIfDue`) while its players are still served with it.
        if let ready = registry.ready(key)?.checksums,
            ready.layout != checksums.layout || ready.digests[index] != checksums.digests[index]
        {
            return
        }
        do {
            try store.store(key, layout: checksums.layout, piece: index, bytes: bytes)
        } catch where error.code != .full {  // a full disk: the store logs it
            logger.warning("piece not kept", metadata: ["object": "\(key)", "error": "\(error)"])
        } catch {}
    }

    /// Piece `index` from the origin by range. A piece that does not verify means the origin's
    /// copy changed: the object's checksums are dropped (it is prepared again) and this throws.
    /// An origin that answers the range with its whole body has that body read once for the
    /// object (`wholeBody`).
    private func fetchPiece(_ key: ObjectKey, _ index: Int, checksums: PieceChecksums, url: String, again: Bool = false) async throws(PieceFailure) -> [UInt8] {
        let site = Self.site(of: url)
        var probe: WholeBodyRead?
        if wholeOrigins.withLock({ $0.contains(site) }) {
            // Seen to ignore ranges: the object's first piece request goes alone, and the
            // others wait to see whether its answer is the whole body (they ask for their own
            // pieces if it is not).
            let (read, mine) = wholeRead(key, index, checksums)
            if mine {
                probe = read
            } else if let got = await fromWholeRead(read, key, index, checksums: checksums) {
                return try got.get()
            }
        }
        // The waiters on a probe that fails: the origin's copy differs for them too; else
        // (a 206, a transfer error, another status) they ask for their own pieces.
        func endProbe(_ outcome: WholeBodyRead.Outcome) {
            if let probe { endWholeRead(probe, key, outcome) }
        }
        let response: OriginResponse
        do {
            response = try await origin.fetch(Self.pieceRequest(url, index, checksums.layout))
        } catch where error.code == .tooLarge {
            // An origin that ignores ranges and sends a copy larger than the one prepared.
            let failure = originDiffers(key, index, checksums, url: url, "the origin's copy of \(key) is larger than the prepared one")
            endProbe(.failed(failure))
            throw failure
        } catch {
            endProbe(.missed)
            throw .origin(error)
        }
        switch response.status {
        case 206:
            endProbe(.missed)
            if probe != nil { _ = wholeOrigins.withLock { $0.remove(site) } }
        case 200:
            wholeOrigins.withLock { seen in
                if seen.count >= 4096 { seen.removeAll() }
                seen.insert(site)
            }
            return try await wholeBody(response, key, index, checksums: checksums, url: url, again: again, probe: probe)
        case 416:
            let failure = originDiffers(key, index, checksums, url: url, "the origin's copy of \(key) is shorter than piece \(index) (416)")
            endProbe(.failed(failure))
            throw failure
        default:
            endProbe(.missed)
            throw .originStatus(response.status, "origin answered \(response.status) for piece \(index) of \(key)")
        }
        let bytes: [UInt8]
        do {
            // The piece's range within its time limit (a 206 only: a 200's body is read whole
            // for the object, paused for its players, as long as they play).
            bytes = try await Self.collect(response.body, upTo: checksums.layout.size(of: index), within: Self.pieceFetchLimit(idle: origin.configuration.idleTimeout))
        } catch where (error.code == .connection || error.code == .timeout) && !again {
            // The connection broke mid-body (the client retries only before the head), or
            // trickled past the piece's time limit: a piece is a small range, asked once more
            // on a new connection, so that a player's response already under way is not cut
            // short for one reset or one stalled connection (and the players who joined the
            // fetch are not held by it without end: a byte every 9 s kept the idle timer going).
            logger.notice("piece from the origin cut short; asking again", metadata: ["object": "\(key)", "piece": "\(index)", "error": "\(error)"])
            return try await fetchPiece(key, index, checksums: checksums, url: url, again: true)
        } catch {
            throw .origin(error)
        }
        let verified = bytes.withUnsafeBytes { checksums.matches(index, $0) }
        guard verified else {
            onBadPiece()
            throw originDiffers(key, index, checksums, url: url, "piece \(index) of \(key) from the origin does not match its checksum")
        }
        noteFetched(key, index, from: .origin)
        keep(key, checksums, index, bytes)
        return bytes
    }

    /// The origin request for piece `index`: its range, no more than the prepared length.
    static func pieceRequest(_ url: String, _ index: Int, _ layout: PieceLayout) -> OriginRequest {
        let first = layout.offset(of: index)
        return OriginRequest(url: url, range: .closed(first: first, last: first + Int64(layout.size(of: index)) - 1), maxBodySize: Int64(layout.length))
    }

    /// How long one piece's body may take to come from the origin: three idle timeouts (30 s
    /// by default: a 256 KiB piece at under 9 kB/s), then it is asked again once. A player that
    /// gives up on a segment asks again, and its retry joins this fetch.
    static func pieceFetchLimit(idle: Duration) -> Duration { idle * 3 }

    /// `body` collected (`upTo` bytes at most) within `limit`, else `.timeout` (the transfer is
    /// abandoned).
    static func collect(_ body: OriginBody, upTo size: Int, within limit: Duration) async throws(OriginError) -> [UInt8] {
        let first = await withTaskGroup(of: Result<[UInt8], OriginError>?.self) { group in
            group.addTask {
                do throws(OriginError) { return .success(try await body.collect(upTo: size)) } catch { return .failure(error) }
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let first else { throw OriginError(.timeout, "the piece's body took longer than \(limit)") }
        return try first.get()
    }

    /// Piece `index` from an origin's 206 or 200 answer (an origin without ranges: read up to
    /// the piece, what comes before it dropped). Shorter when the body is.
    static func readPiece(_ response: OriginResponse, _ index: Int, _ layout: PieceLayout) async throws(OriginError) -> [UInt8] {
        let first = layout.offset(of: index)
        let size = layout.size(of: index)
        if response.status == 206 { return try await response.body.collect(upTo: size) }
        var bytes: [UInt8] = []
        var skipped: Int64 = 0
        var chunks = response.body.makeAsyncIterator()
        while bytes.count < size, let chunk = try await chunks.next() {
            var c = chunk[...]
            if skipped < first {
                let n = Int(min(first - skipped, Int64(c.count)))
                skipped += Int64(n)
                c = c.dropFirst(n)
            }
            bytes += c.prefix(size - bytes.count)
        }
        return bytes
    }

    // MARK: origins that ignore ranges

    /// Objects up to this length are read to their end when their origin sends the whole
    /// body for a piece; a larger one only up to `wholeReadAhead` bytes past the last piece a
    /// player waits for.
    static let wholeReadLimit: Int64 = 64 << 20
    static let wholeReadAhead = 16 << 20
    /// How long a read waits for its players before it ends: under the time origins give a
    /// client that reads nothing (nginx's `send_timeout` is 60 s), so that they do not cut it.
    static let wholeReadPause: Duration = .seconds(20)
    /// Reads waiting at once, at most: each holds one of its host's connections (8), which
    /// players' playlists and pieces need; past it, a read that would wait ends.
    static let maxPausedReads = 2

    /// A player read piece `index` of `key` from the store (not a peer: another node's asks
    /// say nothing of this node's players): a body being read whole for it goes on ahead of
    /// the player.
    public func served(_ key: ObjectKey, _ index: Int, checksums: PieceChecksums) {
        runningRead(key, checksums)?.want(index)
    }

    /// The whole-body read of `key` under way for copy `checksums`, if one is (the copies are
    /// compared by their digests: one array, one buffer, as a rule — no hash per call).
    private func runningRead(_ key: ObjectKey, _ checksums: PieceChecksums) -> WholeBodyRead? {
        wholeReads.withLock { reads in reads[key.id].flatMap { $0.checksums == checksums ? $0.read : nil } }
    }

    /// The scheme and authority of `url` (`http://host:port`).
    static func site(of url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        return String(url[..<(rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex)])
    }

    /// The whole-body read of `key`'s copy under way, else a new one for piece `index`
    /// (`mine`: the caller's to start, or to end).
    private func wholeRead(_ key: ObjectKey, _ index: Int, _ checksums: PieceChecksums) -> (read: WholeBodyRead, mine: Bool) {
        wholeReads.withLock { reads in
            if let running = reads[key.id], running.checksums == checksums { return (running.read, false) }
            // Another copy's read, if any, goes on for its own fetches; this copy's takes its place.
            let read = WholeBodyRead(for: index)
            reads[key.id] = (read, checksums)
            return (read, true)
        }
    }

    /// Ends `read` with `outcome` for the fetches waiting on it, and forgets it.
    private func endWholeRead(_ read: WholeBodyRead, _ key: ObjectKey, _ outcome: WholeBodyRead.Outcome, error: OriginError? = nil) {
        _ = wholeReads.withLock { reads in reads[key.id]?.read === read ? reads.removeValue(forKey: key.id) : nil }
        read.finish(outcome, error: error)
    }

    /// The origin answered piece `index`'s range with its whole body (it ignores ranges): the
    /// body is read once for the object, in the background, each piece verified and kept as
    /// it passes, and this fetch and the object's others meanwhile take their pieces from it.
    /// `probe`: the read this fetch began before asking; else a body already being read for
    /// the object is joined (this one is dropped).
    private func wholeBody(_ response: OriginResponse, _ key: ObjectKey, _ index: Int, checksums: PieceChecksums, url: String, again: Bool, probe: WholeBodyRead?) async throws(PieceFailure) -> [UInt8] {
        let (read, mine) = probe.map { ($0, true) } ?? wholeRead(key, index, checksums)
        if mine {
            logger.info("the origin sent the whole object for a piece's range; reading it once for every piece", metadata: ["object": "\(key)", "piece": "\(index)"])
            Task { await self.readWhole(read, response.body, key, checksums: checksums, url: url) }
        }
        if let got = await fromWholeRead(read, key, index, checksums: checksums) { return try got.get() }
        guard mine else {
            // The read passed the piece and the store did not keep it (full), or stopped short
            // of it: this fetch's own body has it.
            let bytes: [UInt8]
            do { bytes = try await Self.readPiece(response, index, checksums.layout) } catch { throw .origin(error) }
            guard bytes.withUnsafeBytes({ checksums.matches(index, $0) }) else {
                onBadPiece()
                throw originDiffers(key, index, checksums, url: url, "piece \(index) of \(key) from the origin does not match its checksum")
            }
            noteFetched(key, index, from: .origin)
            keep(key, checksums, index, bytes)
            return bytes
        }
        if let error = read.error, error.code != .connection || again { throw .origin(error) }
        guard !again else { throw .origin(OriginError(.connection, "piece \(index) of \(key) was not in the origin's body read for it")) }
        return try await fetchPiece(key, index, checksums: checksums, url: url, again: true)
    }

    /// Piece `index` from `read` (or the store, when the read passed it before it was asked
    /// for); nil: neither had it.
    private func fromWholeRead(_ read: WholeBodyRead, _ key: ObjectKey, _ index: Int, checksums: PieceChecksums) async -> Result<[UInt8], PieceFailure>? {
        switch await read.piece(index) {
        case .piece(let bytes): return .success(bytes)
        case .failed(let failure): return .failure(failure)
        case .missed: return heldPiece(key, index, checksums: checksums).map { .success($0) }
        }
    }

    /// Reads `body`, the whole object from its first byte, into verified pieces: each kept
    /// and handed to the fetches waiting for it (or noted as the origin's, ahead of players).
    /// A piece that fails its check, a body shorter or longer than the prepared copy: the
    /// origin's copy differs (`originDiffers`, once for the read).
    private func readWhole(_ read: WholeBodyRead, _ body: OriginBody, _ key: ObjectKey, checksums: PieceChecksums, url: String) async {
        let layout = checksums.layout
        let wholeObject = layout.length <= Self.wholeReadLimit
        var chunks = body.makeAsyncIterator()
        var index = 0
        var piece: [UInt8] = []
        piece.reserveCapacity(layout.size(of: 0))
        var outcome = WholeBodyRead.Outcome.missed
        var ended: OriginError?
        read.start(wholeObject: wholeObject, ahead: Self.wholeReadAhead / max(1, layout.pieceSize))
        reading: do {
            while index < layout.count {
                // No player near this piece yet: the body waits (its transfer paused) for
                // one to come closer, for a while (a slow player's store hits move it on).
                if !read.reads(index) {
                    guard pausedReads.add(1, ordering: .relaxed).newValue <= Self.maxPausedReads else {
                        pausedReads.subtract(1, ordering: .relaxed)
                        break reading
                    }
                    let wanted = await read.demand(index, within: Self.wholeReadPause)
                    pausedReads.subtract(1, ordering: .relaxed)
                    guard wanted else { break reading }
                }
                guard let chunk = try await chunks.next() else {
                    outcome = .failed(originDiffers(key, index, checksums, url: url, "the origin's copy of \(key) is shorter than the prepared one"))
                    break reading
                }
                var rest = chunk[...]
                while !rest.isEmpty {
                    guard index < layout.count else {
                        outcome = .failed(originDiffers(key, index - 1, checksums, url: url, "the origin's copy of \(key) is larger than the prepared one"))
                        break reading
                    }
                    let take = min(rest.count, layout.size(of: index) - piece.count)
                    piece += rest.prefix(take)
                    rest = rest.dropFirst(take)
                    guard piece.count == layout.size(of: index) else { continue }
                    guard piece.withUnsafeBytes({ checksums.matches(index, $0) }) else {
                        onBadPiece()
                        outcome = .failed(originDiffers(key, index, checksums, url: url, "piece \(index) of \(key) from the origin does not match its checksum"))
                        break reading
                    }
                    // Kept before it is handed on: a fetch that comes once the read passed
                    // it finds it in the store.
                    if !store.has(key, piece: index) {
                        noteFetched(key, index, from: .origin)
                        keep(key, checksums, index, piece)
                    }
                    read.deliver(index, piece)
                    index += 1
                    piece.removeAll(keepingCapacity: true)
                }
            }
            // Every piece read: a byte more is a copy longer than the prepared one.
            if index == layout.count, let more = try await chunks.next(), !more.isEmpty {
                outcome = .failed(originDiffers(key, index - 1, checksums, url: url, "the origin's copy of \(key) is larger than the prepared one"))
            }
        } catch where error.code == .tooLarge {
            outcome = .failed(originDiffers(key, index, checksums, url: url, "the origin's copy of \(key) is larger than the prepared one"))
        } catch {
            ended = error
        }
        endWholeRead(read, key, outcome, error: ended)
    }

    /// The origin sent other bytes for piece `index` of `key` from `url`, a player's URL: its
    /// query may select other bytes under the same path (another variant, or a request made to
    /// replace a good copy for every player), so the registry drops the copy only once the URL
    /// it was prepared from says the origin's copy changed (`recheck`, here or at the
    /// tracker). The player's request fails over to the origin meanwhile.
    private func originDiffers(_ key: ObjectKey, _ index: Int, _ checksums: PieceChecksums, url: String, _ why: String) -> PieceFailure {
        let ref = ObjectRef(key: key, url: url)
        if let link {
            // This node's checksums are the tracker's answer, asked again at the next request;
            // the tracker's registry checks the piece from its source and, if the copy changed,
            // prepares it again and has every node that holds it drop it.
            if registry.drop(key, ifCopy: checksums) {
                logger.warning("the origin sent other bytes for a piece; asking the tracker", metadata: ["object": "\(key)", "why": "\(why)"])
                store.remove(key)
            }
            Task { await link.changed(ref, piece: index) }
        } else if let ready = registry.ready(key), ready.checksums == checksums, ready.entry.sourceURL == url {
            return originChanged(key, index, checksums, url: url, why)
        } else {
            Task { await self.recheck(ref, piece: index) }
        }
        return .originChanged(why)
    }

    /// The origin's copy of `key` is no longer the one `checksums` were made from: they and the
    /// pieces held are dropped, and the object is prepared again — unless the registry holds
    /// other checksums by now (a fetch that started before the object was prepared again must
    /// not drop the new copy).
    private func originChanged(_ key: ObjectKey, _ index: Int, _ checksums: PieceChecksums, url: String, _ why: String) -> PieceFailure {
        if registry.drop(key, ifCopy: checksums) {
            logger.warning("the origin's copy changed; preparing the object again", metadata: ["object": "\(key)", "why": "\(why)"])
            store.remove(key)
            prepareQueue.enqueue(key, url: url, urgent: true)
            copyDroppedObserver.withLock { $0 }?.call((key, checksums))
        }
        return .originChanged(why)
    }

    /// Tells `observer` each copy this node's registry drops as the origin's changed (a
    /// tracker tells the nodes that hold it).
    public func onCopyDropped(_ observer: @escaping @Sendable (ObjectKey, PieceChecksums) -> Void) {
        copyDroppedObserver.withLock { $0 = Callback { observer($0.0, $0.1) } }
    }

    /// The tracker's registry dropped copy `copy` (a checksums `fingerprint`) of object
    /// `objectID`: if that is the copy held here, its checksums and pieces go too, and the
    /// next request asks the tracker for the new one. Another copy (the new one, already
    /// here) stays.
    func dropCopy(_ objectID: String, copy: String) {
        guard let ready = registry.ready(id: objectID), ready.checksums.fingerprint == copy,
            registry.drop(ready.entry.key, ifCopy: ready.checksums)
        else { return }
        let key = ready.entry.key
        logger.info("the registry dropped the copy held here; dropping it too", metadata: ["object": "\(key)"])
        store.remove(key)
        swarm.withLock { $0.peerLists[objectID] = nil }
    }

    /// A node says the origin's copy of piece `index` of `ref` changed: the piece is fetched
    /// from the origin here, with `If-Match` when the registry has the copy's strong ETag, and
    /// the checksums are dropped (and the object prepared again) only if the origin's copy
    /// really is another one: a 412, or bytes that fail the check without a validator that
    /// says the copy is the same (a URL whose query selects other bytes is not a change).
    /// At most `maxRechecks` at once (more are dropped), once per object per `recheckInterval`.
    /// Returns whether the origin's copy is another one (and was dropped); nil when nothing
    /// was checked (no slot, checked lately, no source URL, the origin could not tell).
    @discardableResult
    public func recheck(_ ref: ObjectRef, piece index: Int) async -> Bool? {
        guard index >= 0, let ready = registry.ready(ref.key), index < ready.checksums.layout.count else { return nil }
        let now = ContinuousClock.now
        enum Turn { case now, wait, no }
        let turn = rechecks.withLock { r -> Turn in
            if r.last.count >= 4096 { r.last = r.last.filter { now - $0.value < Self.recheckInterval } }
            guard r.last.count < 4096, r.last[ref.key.id].map({ now - $0 >= Self.recheckInterval }) ?? true,
                r.waiting.count < Self.maxWaitingRechecks
            else { return .no }
            r.last[ref.key.id] = now
            guard r.running < Self.maxRechecks else { return .wait }
            r.running += 1
            return .now
        }
        switch turn {
        case .no: return nil
        case .wait:
            // A live playlist that started over has all its objects rechecked at once: they
            // wait their turn (they were dropped, and their old copies kept).
            await withCheckedContinuation { c in
                let start = rechecks.withLock { r -> Bool in
                    guard r.running < Self.maxRechecks else { r.waiting.append(c); return false }
                    r.running += 1
                    return true
                }
                if start { c.resume() }
            }
        case .now: break
        }
        defer {
            let next = rechecks.withLock { r -> CheckedContinuation<Void, Never>? in
                guard !r.waiting.isEmpty else { r.running -= 1; return nil }
                return r.waiting.removeFirst()  // its turn: the slot passes on
            }
            next?.resume()
        }
        // From the URL this registry prepared the copy from: a node's URL may carry a query
        // that selects other bytes under the same path (or names a variant with an ETag of its
        // own), and the object would be prepared again from it and served to every node.
        guard let source = ready.entry.sourceURL else {
            logger.info("a node says the origin's copy changed; the registry kept no source URL for it", metadata: ["object": "\(ref.key)"])
            return nil
        }
        let checksums = ready.checksums
        let etag = ready.entry.etag.flatMap { $0.hasPrefix("W/") ? nil : $0 }
        var verdict = await compare(source, index, checksums, ifMatch: etag)
        // A 412 may come from servers behind one name with ETags of their own for the same
        // bytes: the bytes say (every copy would otherwise be prepared again at each check).
        if verdict == .preconditionFailed { verdict = await compare(source, index, checksums, ifMatch: nil) }
        switch verdict {
        case .another?:
            _ = originChanged(ref.key, index, checksums, url: source, "the origin's copy is another one")
            return true
        case .same?: return false
        case .preconditionFailed?, nil: return nil
        }
    }

    enum Comparison { case same, another, preconditionFailed }

    /// Piece `index` of the origin's copy at `source` against `checksums` (with `If-Match` when
    /// the copy has a strong ETag); nil when the origin could not tell.
    private func compare(_ source: String, _ index: Int, _ checksums: PieceChecksums, ifMatch etag: String?) async -> Comparison? {
        var request = Self.pieceRequest(source, index, checksums.layout)
        if let etag { request.headers = [("If-Match", etag)] }
        guard let response = try? await origin.fetch(request) else { return nil }
        // Other bytes (or none: 416) under the same strong ETag: this URL names another variant.
        let anotherCopy = etag == nil || response.header("ETag") != etag
        switch response.status {
        case 412:
            return .preconditionFailed
        case 206, 200:
            // Another length (Content-Range's, or a whole 200's) is another copy, whatever piece 0 holds.
            let total = response.status == 206
                ? response.header("Content-Range")?.split(separator: "/").last.flatMap { Int64($0) }
                : response.header("Content-Length").flatMap { Int64($0) }
            guard let bytes = try? await Self.readPiece(response, index, checksums.layout) else { return nil }
            let differs = !bytes.withUnsafeBytes { checksums.matches(index, $0) } || total.map { $0 != checksums.layout.length } ?? false
            return differs && anotherCopy ? .another : .same
        case 416:
            return anotherCopy ? .another : .same
        default:
            return nil
        }
    }

    /// Rechecks for nodes that said an origin copy changed, at most at once, and waiting.
    static let maxRechecks = 2
    static let maxWaitingRechecks = 256

    /// A live playlist started over (its media sequence went back: the encoder was restarted)
    /// and lists these objects, which may be new ones under the names of old ones: an encoder
    /// writes `seg00000.ts` again. The copies held are not served as they are. A node whose
    /// registry is the swarm's drops them (the tracker tells the nodes that hold them; the
    /// caller queues them again). Another drops its own, says so to the tracker, whose
    /// registry checks its copy against the origin (dropping it if it changed), and doubts
    /// the copy it held (any, if none) for `doubtLifetime`: while the tracker still names it,
    /// players are sent to the origin.
    public func doubt(_ refs: [ObjectRef]) {
        let until = ContinuousClock.now + Self.doubtLifetime
        // The tracker is told of the newest (a long DVR list's thousands would pass its
        // message rate); the others' copies here are dropped and doubted all the same.
        let told = Set(refs.suffix(Self.maxChangedPerDoubt).map(\.key.id))
        for ref in refs {
            let ready = registry.ready(ref.key)
            // Doubted before the drop: a checksum fetch that marks the old copy ready in
            // between finds the doubt (`undoubted`), where it found neither.
            if link != nil {
                doubts.withLock { d in
                    if d.count >= 4096 { d = d.filter { ContinuousClock.now < $0.value.until } }
                    d[ref.key.id] = (ready?.checksums.fingerprint, until)
                }
            }
            if let ready, registry.drop(ref.key, ifCopy: ready.checksums) {
                store.remove(ref.key)
                if link == nil { copyDroppedObserver.withLock { $0 }?.call((ref.key, ready.checksums)) }
            }
            guard let link else { continue }
            swarm.withLock { $0.peerLists[ref.key.id] = nil }
            if told.contains(ref.key.id) { Task { await link.changed(ref, piece: 0) } }
        }
    }

    /// The objects of one `doubt` the tracker is told of, at most.
    static let maxChangedPerDoubt = 32

    /// A copy older than `revalidateAfter` is checked against the origin in the background
    /// while it is served, as a shared HTTP cache revalidates what it keeps: a file replaced
    /// at the origin under its name was served as it was, by every node, for ever (found by
    /// an attack). The registry that prepared it checks it (`recheck`), once per period
    /// whoever asks, and drops it (it is prepared again, and the nodes that hold it drop it)
    /// if the origin's copy is another one. A node of a tracker forgets its checksums, so that
    /// its next request asks the tracker again (whose registry checks its copy); the pieces it
    /// holds stay, verified against whatever checksums come.
    private func revalidateIfDue(_ entry: RegistryEntry, url: String) {
        guard let after = revalidateAfter, Date().timeIntervalSince(entry.updated) > Double(after.components.seconds) else { return }
        if link != nil {
            if let checksums = entry.checksums { _ = registry.drop(entry.key, ifCopy: checksums) }
            return
        }
        let now = ContinuousClock.now
        let go = revalidating.withLock { r -> Bool in
            guard r[entry.key.id].map({ $0 <= now }) ?? true else { return false }
            if r.count >= 4096 { r = r.filter { $0.value > now } }
            r[entry.key.id] = now + .seconds(3600)  // under way
            return true
        }
        guard go else { return }
        let ref = ObjectRef(key: entry.key, url: url)
        Task {
            let outcome = await recheck(ref, piece: 0)
            // Found the same: good for another period. Not checked (no slot, the origin could
            // not tell): again after `recheckInterval`.
            if outcome == false { registry.update(ref.key) { _ in } }
            revalidating.withLock { $0[ref.key.id] = outcome == nil ? ContinuousClock.now + Self.recheckInterval : nil }
        }
    }

    /// How long a copy in doubt is not served while the tracker still names it.
    static let doubtLifetime: Duration = .seconds(10)

    /// Whether copy `copy` (a checksums fingerprint) of object `id` is in doubt now.
    private func doubted(_ id: String, _ copy: String) -> Bool {
        doubts.withLock { d in
            guard let doubt = d[id] else { return false }
            guard ContinuousClock.now < doubt.until else {
                d[id] = nil
                return false
            }
            return doubt.copy == nil || doubt.copy == copy
        }
    }

    /// How often one object is checked against the origin for a node that says it changed.
    static let recheckInterval: Duration = .seconds(10)

    // MARK: audits

    /// A node reported that the holder at `holderURL` sent it a bad piece `index` of object
    /// `objectID`: the same request is made again here, naming the reporter (`requester`,
    /// with a piece `token` the tracker made for it), and its answer checked against the
    /// registry's checksum. A holder that lies only to some requests could still tell the two
    /// apart (by address, or as a repeat of a request it just answered) and answer this one
    /// truly; that holder is not banned, but each node it lies to drops it for the object.
    public func audit(_ objectID: String, piece index: Int, holderURL: String, requester: String, token: String) async -> AuditVerdict {
        guard let checksums = registry.ready(id: objectID)?.checksums else { return .inconclusive("no checksums ready for the object") }
        guard index >= 0, index < checksums.layout.count else { return .inconclusive("no such piece") }
        let size = checksums.layout.size(of: index)
        let url = Self.peerPieceURL(holderURL, objectID, index, from: requester, token: token, sha: checksums.digests[index].short)
        let request = OriginRequest(url: url, timeouts: .init(connect: .seconds(1), idle: Self.auditTimeout, total: Self.auditTimeout), maxBodySize: Int64(size))
        let bytes: [UInt8]
        do {
            let response = try await peerClient.fetch(request)
            guard response.status == 200 else { return .inconclusive("the holder answered \(response.status)") }
            bytes = try await response.body.collect(upTo: size)
        } catch {
            // More bytes than the piece has is a piece that cannot match.
            if error.code == .tooLarge { return .bad("the holder sent more bytes than the piece has") }
            return .inconclusive("the holder could not be fetched from: \(error)")
        }
        guard bytes.withUnsafeBytes({ checksums.matches(index, $0) }) else { return .bad("the holder sent bytes that fail the piece's checksum") }
        return .intact
    }

    /// How long an audit's piece request may take.
    static let auditTimeout: Duration = .seconds(5)
}

/// What the store comes to hold or lose, told to the tracker in batches: the changes of a few
/// milliseconds go in one `have` or `lost` message each, in the order they happened, so that a
/// node whose players fetch many segments stays far below the tracker's message rate.
final class Announcements: Sendable {
    struct State {
        /// Runs of changes of one kind, oldest first.
        var pending: [(held: Bool, ids: [String])] = []
        var scheduled = false
    }

    static let window: Duration = .milliseconds(20)
    let link: TrackerLink
    private let state = Mutex(State())

    init(link: TrackerLink) { self.link = link }

    func add(held: Bool, _ ids: [String]) {
        let schedule = state.withLock { s -> Bool in
            if let last = s.pending.last, last.held == held {
                s.pending[s.pending.count - 1].ids += ids
            } else {
                s.pending.append((held, ids))
            }
            defer { s.scheduled = true }
            return !s.scheduled
        }
        guard schedule else { return }
        // One sender at a time: changes that come while a batch is being sent go in the next
        // batch of the same task, never in a second task that could overtake the first.
        Task {
            while true {
                try? await Task.sleep(for: Self.window)
                let runs = self.state.withLock { s in
                    if s.pending.isEmpty { s.scheduled = false }
                    defer { s.pending = [] }
                    return s.pending
                }
                guard !runs.isEmpty else { return }
                for run in runs {
                    if run.held { await self.link.announce(run.ids) } else { await self.link.withdraw(run.ids) }
                }
            }
        }
    }
}

/// Why the node's swarm side failed.
public struct SwarmError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
