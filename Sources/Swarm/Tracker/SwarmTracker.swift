import Foundation
import Logging
import Manifest
import PieceStore
import Synchronization

/// The tracker's signalling (SPEC section 3): authenticated sessions of nodes, what each holds,
/// and answers to wants with the peers that hold an object, best first, each with a
/// short-lived piece token. Transport-neutral: `serve(_:send:)` runs one connection from its
/// text messages; the HTTP server feeds it WebSocket frames.
public final class SwarmTracker: Sendable {
    struct Session {
        var url: String
        /// `banKey(url)`, made once at login: a want checks every holder's against the bans.
        var banKey: String
        var connection: UInt64
        var lastSeen: ContinuousClock.Instant
        var send: @Sendable (String) async throws -> Void
        /// What the node announced it holds, as 16 bytes each.
        var objects: Set<HeldID> = []
        /// Times handed out to others lately: wants spread load over holders.
        var handouts = 0
        /// Objects the node asked to prepare and is told about when they are ready.
        var watched: Set<String> = []
    }

    struct State {
        var sessions: [String: Session] = [:]
        /// What audits proved against the peers at each URL (`banKey`), and bans
        /// (`OffenceLog` keeps them). By URL, where the bad bytes came from, not by peer id: an
        /// id is the node's own claim, and anyone holding the secret could log in under an
        /// honest node's id (once its session ended) from a liar's URL and have it banned.
        var offences: [String: PeerOffences] = [:]
        /// When each (reporter, holder, object) was last audited.
        var audited: [String: ContinuousClock.Instant] = [:]
        /// Audits waiting or running, by reporter.
        var waitingAudits: [String: Int] = [:]
        /// Holders not handed out for an object while reports of them wait for their audits,
        /// by `suspensionKey`: how many audits, and since when (`maxSuspension`).
        var suspended: [String: (audits: Int, since: ContinuousClock.Instant)] = [:]
        /// Copies the registry dropped lately, by object: a node that announces one of them
        /// is told (it may hold that copy, having been away when the others were told).
        var droppedCopies: [String: (copies: [String], at: ContinuousClock.Instant)] = [:]
        var nextConnection: UInt64 = 0
        /// Objects announced, over every session: what `maxAnnouncedObjects` bounds.
        var announced = 0

        /// Sets the session of `peer` (nil: ends it), keeping `announced` the sum over sessions.
        mutating func setSession(_ peer: String, _ session: Session?) {
            announced += (session?.objects.count ?? 0) - (sessions[peer]?.objects.count ?? 0)
            sessions[peer] = session
        }

        /// Whether peers at the URL of ban key `key` are banned at `now`.
        func isBanned(key: String, at now: Date) -> Bool {
            offences[key]?.bannedUntil.map { $0 > now } ?? false
        }

        /// Changes, in place, what the session of `peer` holds, keeping `announced` the sum.
        mutating func changeObjects(of peer: String, _ change: (inout Set<HeldID>) -> Void) {
            guard let before = sessions[peer]?.objects.count else { return }
            change(&sessions[peer]!.objects)
            announced += sessions[peer]!.objects.count - before
        }
    }

    public let heartbeat: Duration
    /// Peers in one answer to a want.
    public let peersPerWant: Int
    /// Bad pieces proven within `banTime` after which a peer is banned, for `banTime`.
    public let banAfter: Int
    /// How long a ban lasts, and how long a proven bad piece counts towards one.
    public let banTime: Duration
    /// Messages a connection may send per second (burst twice that) before it is closed.
    public let messagesPerSecond: Double
    /// Bytes of messages a connection may send per second, past a burst of eight times that:
    /// beyond it the tracker reads the connection's next message only when the budget allows
    /// (TCP then slows the node), so one connection cannot have it parse megabytes without end.
    public let bytesPerSecond: Double
    /// How long a session may send nothing before it is over: three heartbeats.
    var silentAfter: Duration { heartbeat * 3 }
    /// Objects one session may announce as held, at most (a million ids are about 50 MB):
    /// past it a node's further objects are not handed out, and the tracker's memory is not
    /// spent without end.
    public let maxObjectsPerSession: Int
    /// Objects all sessions together may announce, at most (about 50 bytes of memory each):
    /// past it no session's further objects are kept. 300 gateways holding 60,000 segments
    /// each are 18 million; without it, anyone holding the secret could log in under a
    /// thousand peer ids, announce a million ids with each, and have the tracker's memory.
    public let maxAnnouncedObjects: Int
    /// `sums` one connection may have waiting for their answers (each may wait for the origin
    /// and a preparation, up to a minute): past it, a `sums` is answered `unavailable` at once
    /// (its node sends the player to the origin). Each waiting one was a task and a queued
    /// job without bound: a node sending them at its message rate had some 30,000 waiting.
    public let maxWaitingSums: Int
    /// Bytes of messages to one node, unasked, waiting to be sent at once, at most.
    public let maxUnaskedBytes: Int
    /// An unasked message left out: too many of them wait for the node already.
    struct Unsent: Error {}
    /// What a connection's messages end with when it broke the protocol: the tracker ends the
    /// session with `reason`.
    public struct SignallingFault: Error, Sendable {
        public let reason: String
        public init(_ reason: String) { self.reason = reason }
    }
    let verifier: LoginVerifier
    /// Where offences and bans are kept across restarts (none: in memory only).
    private let offenceLog: (any OffenceLog)?
    /// Held over a change of a URL's offences and its write to `offenceLog`, so that the file
    /// gets the changes in the order memory did: an audit's ban written after an operator's
    /// lift of it came back at the next start.
    private let offenceWrites = Mutex(())
    let secret: String
    /// The checksum registry and the first seed: the node the tracker runs in.
    let host: (any TrackerHost)?
    private let state = Mutex(State())
    /// Reports waiting for their audit, one audit at a time.
    private let audits: AsyncStream<Report>.Continuation
    private let logger: Logger
    /// Where `prepare`s are queued at the host, one after another: queuing writes the
    /// registry (SQLite, tens of milliseconds for a long VOD), which must not hold one of
    /// Swift's few cooperative threads, on which every connection's messages are answered.
    private let registryWrites = DispatchQueue(label: "swarmgate.tracker.prepare", qos: .utility)

    /// A node's report that `holder` sent it a bad piece.
    struct Report: Sendable {
        var holder: String
        var holderURL: String
        var object: String
        var piece: Int
        var reporter: String
    }

    public init(
        appID: String, secret: String, heartbeat: Duration = .seconds(10), peersPerWant: Int = 5, banAfter: Int = 3,
        banTime: Duration = .seconds(86_400),
        messagesPerSecond: Double = 500, bytesPerSecond: Double = 8_388_608, maxObjectsPerSession: Int = 1_000_000,
        maxAnnouncedObjects: Int = 40_000_000, maxWaitingSums: Int = 1024, maxUnaskedBytes: Int = 8 << 20, host: (any TrackerHost)? = nil,
        nonceLog: (any NonceLog)? = nil, offenceLog: (any OffenceLog)? = nil, logger: Logger
    ) {
        self.banTime = banTime
        self.offenceLog = offenceLog
        do {
            let now = Date(), memory = Double(banTime.milliseconds) / 1000
            let all = try offenceLog?.offences() ?? [:]
            let kept = all.filter { $0.value.matters(at: now, memory: memory) }
            state.withLock { $0.offences = kept }
            // What no longer counts leaves the file too (each start's, so the table holds what
            // counted within a ban's time of the last start).
            for key in all.keys where kept[key] == nil { try? offenceLog?.record(nil, for: key) }
        } catch {
            // The tracker still works; only what was proven before this start is not known.
            logger.warning("cannot read the peers' offences: bans from before this start are not kept", metadata: ["error": "\(error)"])
        }
        self.maxUnaskedBytes = maxUnaskedBytes
        self.maxObjectsPerSession = maxObjectsPerSession
        self.maxAnnouncedObjects = maxAnnouncedObjects
        self.maxWaitingSums = maxWaitingSums
        self.bytesPerSecond = bytesPerSecond
        self.host = host
        self.verifier = LoginVerifier(appID: appID, secret: secret, log: nonceLog)
        self.secret = secret
        self.heartbeat = heartbeat
        self.peersPerWant = peersPerWant
        self.banAfter = banAfter
        self.messagesPerSecond = messagesPerSecond
        self.logger = logger
        let (reports, audits) = AsyncStream.makeStream(of: Report.self, bufferingPolicy: .bufferingOldest(Self.maxQueuedAudits))
        self.audits = audits
        guard let host else { return }
        Task.detached(priority: .utility) { [weak self] in
            for await report in reports {
                guard let self else { return }
                await self.audit(report, host: host)
            }
        }
    }

    deinit { audits.finish() }

    /// Sessions logged in now, and the objects they announced in all (`/metrics`).
    public var load: (sessions: Int, announcedObjects: Int) { state.withLock { ($0.sessions.count, $0.announced) } }

    /// Peer URLs banned now.
    public var bannedPeers: Int {
        let now = Date()
        return state.withLock { s in s.offences.keys.count { s.isBanned(key: $0, at: now) } }
    }

    /// Peer ids logged in now.
    public var peerIDs: [String] { state.withLock { Array($0.sessions.keys).sorted() } }

    /// Runs one connection: the first message must be a valid login (within a heartbeat), then
    /// messages are answered until the connection ends, goes silent for three heartbeats, or
    /// floods. Returns why it ended.
    public func serve(_ messages: some AsyncSequence<String, any Error>, send: @escaping @Sendable (String) async throws -> Void) async -> String {
        let connection = state.withLock { s in
            s.nextConnection += 1
            return s.nextConnection
        }
        var iterator = messages.makeAsyncIterator()
        guard let first = try? await iterator.next(), let login = SwarmMessage(json: first), login.type == "login" else {
            // Cancelled (no login within a heartbeat, or closed for a newer connection): the
            // close says why, not this.
            if !Task.isCancelled { try? await send(Self.refused("the first message must be a login")) }
            return "no login"
        }
        // What goes to the node unasked (checksums pushed as objects become ready, copies
        // dropped) waits in a task of its own for the node to read it: bounded per connection,
        // past which it is left out (the node asks for checksums when its players need them). A
        // node that read nothing and sent `prepare`s grew the tracker without end, a 1 MB push
        // for each 9 KB message.
        let unaskedBytes = BoundedCount(maxUnaskedBytes)
        let maxUnaskedBytes = self.maxUnaskedBytes
        let unasked: @Sendable (String) async throws -> Void = { text in
            // One larger than the bound goes when nothing else waits.
            let n = min(text.utf8.count, maxUnaskedBytes)
            guard unaskedBytes.take(n) else { throw Unsent() }
            defer { unaskedBytes.give(n) }
            try await send(text)
        }
        let peer: String
        switch admit(login, connection: connection, send: unasked) {
        case .failure(let why):
            let named = login.peerId.flatMap { Self.isPeerID($0) ? $0 : nil } ?? "(none or malformed)"
            logger.warning("login refused", metadata: ["peer": "\(named)", "reason": "\(why.rawValue)"])
            let heard = why == .peerInUse ? login.peerId.map(heardAgo) : nil
            try? await send(Self.refused(why.rawValue, heardAgo: heard))
            return why.rawValue
        case .success(let id):
            peer = id
        }
        defer { leave(peer, connection: connection) }
        var welcome = SwarmMessage(type: "welcome")
        welcome.heartbeat = Int(heartbeat.components.seconds)
        do { try await send(welcome.json) } catch { return "closed" }
        logger.info("node logged in", metadata: ["peer": "\(peer)"])
        var bucket = TokenBucket(rate: messagesPerSecond, burst: 2 * messagesPerSecond)
        var bytes = TokenBucket(rate: bytesPerSecond, burst: 8 * bytesPerSecond)
        // A long VOD's `prepare` is thousands of objects, and queuing them writes the registry
        // and the jobs (34 ms for 3,000 here). They are queued one after another off this
        // loop, so the messages the node sends next, its players' first `sums`, are not held;
        // a node that sends them faster than they are queued has the excess dropped (past
        // `maxQueuedPrepares` messages or `maxQueuedPrepareObjects` objects). Those still
        // queued when the connection ends are not prepared.
        let (prepares, queue) = AsyncStream.makeStream(of: SwarmMessage.self, bufferingPolicy: .bufferingOldest(Self.maxQueuedPrepares))
        let backlog = Backlog(objects: Self.maxQueuedPrepareObjects, sums: maxWaitingSums)
        var refusedSums = false
        Task.detached(priority: .utility) {
            for await m in prepares {
                defer { backlog.objects.give(Self.objectsTaken(m)) }
                guard self.state.withLock({ $0.sessions[peer]?.connection == connection }) else { continue }
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    self.registryWrites.async {
                        self.prepare(m, from: peer)
                        done.resume()
                    }
                }
                // An operator's prepare waits for this: its objects are queued now.
                if let rid = m.rid {
                    var done = SwarmMessage(type: "prepared")
                    done.rid = rid
                    try? await send(done.json)
                }
            }
        }
        defer { queue.finish() }
        while true {
            let text: String?
            do { text = try await iterator.next() } catch let fault as SwarmTracker.SignallingFault { return fault.reason } catch { return "closed" }
            guard let text else { return "closed" }
            guard bucket.take() else {
                try? await send(Self.refused("too many messages"))
                return "rate limit"
            }
            let wait = bytes.spend(Double(text.utf8.count))
            if wait > .zero {
                do { try await Task.sleep(for: wait) } catch { return "closed" }
            }
            // A session that expired for silence, was banned or was replaced by a newer login
            // ends here, so that the node notices and logs in again.
            guard state.withLock({ $0.sessions[peer]?.connection == connection }) else {
                try? await send(Self.refused("session ended"))
                return "session ended"
            }
            guard let message = SwarmMessage(json: text) else { continue }
            if message.type == "prepare" {
                // Heard from, as for every other message: a connection that only prepares (an
                // operator's `prepare`) expired after three heartbeats, its answers unsent.
                state.withLock { s in s.sessions[peer]?.lastSeen = .now }
                let objects = Self.objectsTaken(message)
                var dropped: String?
                if !backlog.objects.take(objects) {
                    dropped = "too many objects queued"
                } else if case .dropped = queue.yield(message) {
                    backlog.objects.give(objects)
                    dropped = "too many prepares queued"
                }
                if let dropped {
                    logger.warning("prepare dropped: \(dropped)", metadata: ["peer": "\(peer)", "objects": "\(objects)"])
                    // An operator's prepare waits for its answer: it hears at once that the
                    // tracker is busy, not after its timeout.
                    if let rid = message.rid {
                        var busy = SwarmMessage(type: "prepared")
                        busy.rid = rid
                        busy.reason = dropped
                        do { try await send(busy.json) } catch { return "closed" }
                    }
                }
                continue
            }
            if message.type == "sums" {
                guard backlog.sums.take(1) else {
                    if !refusedSums {
                        refusedSums = true
                        logger.warning("checksum requests past the bound answered unavailable", metadata: ["peer": "\(peer)", "waiting": "\(maxWaitingSums)"])
                    }
                    var busy = SwarmMessage(type: "sums")
                    busy.rid = message.rid
                    busy.object = message.ref?.key.id
                    busy.answer = ChecksumAnswer(state: .unavailable, reason: "too many checksum requests waiting")
                    do { try await send(busy.json) } catch { return "closed" }
                    continue
                }
                // The registry may have to wait for the origin: answered when it knows.
                answerChecksums(message, from: peer, send: send) { backlog.sums.give(1) }
                continue
            }
            if let answer = handle(message, from: peer) {
                do { try await send(answer.json) } catch { return "closed" }
            }
        }
    }

    static func refused(_ reason: String, heardAgo: Int? = nil) -> String {
        var m = SwarmMessage(type: "refused")
        m.reason = reason
        m.heardAgo = heardAgo
        return m.json
    }

    private func admit(_ m: SwarmMessage, connection: UInt64, send: @escaping @Sendable (String) async throws -> Void) -> Result<String, LoginRefusal> {
        guard let appID = m.appId, let peer = m.peerId, let ts = m.ts, let nonce = m.nonce, let sig = m.sig, let url = m.url else {
            return .failure(.badSignature)
        }
        do {
            try verifier.verify(LoginProof(appID: appID, peerID: peer, timestamp: ts, nonce: nonce, signature: sig))
        } catch {
            return .failure(error)
        }
        guard Self.isPeerID(peer) else { return .failure(.badPeerID) }
        guard Self.isPeerURL(url) else { return .failure(.badURL) }
        let banKey = Self.banKey(url)
        if state.withLock({ $0.isBanned(key: banKey, at: Date()) }) { return .failure(.banned) }
        // The seed's id (a node's cache folder copied from the node that runs this tracker)
        // is always in use.
        if let host, peer == host.seedPeerID { return .failure(.peerInUse) }
        let now = ContinuousClock.now
        return state.withLock { s -> Result<String, LoginRefusal> in
            // A node that logs in again replaces its old session, from the same URL. From
            // another, only once the old session is silent: else anyone holding the secret
            // could take over a node's id, point its URL at a liar and have it banned.
            if let old = s.sessions[peer], old.url != url, now - old.lastSeen <= silentAfter { return .failure(.peerInUse) }
            s.setSession(peer, Session(url: url, banKey: banKey, connection: connection, lastSeen: now, send: send))
            return .success(peer)
        }
    }

    /// Milliseconds since the session of `peer` was last heard (0 for the seed, always live,
    /// and for a session gone meanwhile: the next login goes through).
    private func heardAgo(_ peer: String) -> Int {
        if let host, peer == host.seedPeerID { return 0 }
        guard let seen = state.withLock({ $0.sessions[peer]?.lastSeen }) else { return 0 }
        return Int((ContinuousClock.now - seen).milliseconds)
    }

    private func leave(_ peer: String, connection: UInt64) {
        state.withLock { s in
            if s.sessions[peer]?.connection == connection { s.setSession(peer, nil) }
        }
    }

    /// Whether `url` can be where a node serves pieces: http or https to a host, with no user,
    /// query or fragment (piece paths are appended to it, by every node and by audits).
    /// What offences and bans of peers at `url` are kept under: the URL without trailing
    /// slashes, its scheme and host lowercased (`isPeerURL` holds for it).
    public static func banKey(_ url: String) -> String {
        var key = url
        if var c = URLComponents(string: url) {
            c.scheme = c.scheme?.lowercased()
            c.host = c.host?.lowercased()
            key = c.string ?? url
        }
        while key.hasSuffix("/") { key.removeLast() }
        return key
    }

    /// A peer id: 1 to 128 of `A-Z a-z 0-9 . _ : -` (a node makes `node-` and 13 more).
    /// Anything else is refused at login before it is logged or handed out: ids of 15 KB, or
    /// with line breaks or terminal escapes, went into the tracker's log and every `peers`.
    static func isPeerID(_ id: String) -> Bool { XResID.isValid(id.utf8, also: UInt8(ascii: ":")) }

    static func isPeerURL(_ url: String) -> Bool {
        guard let c = URLComponents(string: url), let scheme = c.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = c.host, !host.isEmpty, c.user == nil, c.password == nil, c.query == nil, c.fragment == nil
        else { return false }
        return true
    }

    /// Answers one message of a logged-in peer (nil: no answer).
    func handle(_ m: SwarmMessage, from peer: String) -> SwarmMessage? {
        state.withLock { s in s.sessions[peer]?.lastSeen = .now }
        switch m.type {
        case "ping":
            return SwarmMessage(type: "pong")
        case "have":
            // `maxObjectsPerSession` at most: what a node announces is kept for its session,
            // and a session's memory is bounded; so is all sessions' (`maxAnnouncedObjects`).
            // Object ids only (64 hex digits): the bound is then one of memory too.
            let announced = state.withLock { s -> [String] in
                guard let held = s.sessions[peer]?.objects.count else { return [] }
                let room = min(maxObjectsPerSession - held, maxAnnouncedObjects - s.announced)
                // Each id read once: `HeldID` takes object ids only.
                let taken = Array((m.objects ?? []).lazy.compactMap { id in HeldID(id).map { (id, $0) } }.prefix(max(0, room)))
                s.changeObjects(of: peer) { $0.formUnion(taken.lazy.map(\.1)) }
                return taken.map(\.0)
            }
            tellDropped(announced, to: peer)
            // Objects just stored mean a player got there: read-ahead moves on. Everything a
            // node holds, announced at its login (`whole`), is mostly long played: a restarted
            // tracker would open a window past each of them for players long gone.
            if let host, m.whole != true { watch(host.reached(announced, remember: false), for: peer, host: host) }
            return nil
        case "lost":
            state.withLock { s in s.changeObjects(of: peer) { $0.subtract((m.objects ?? []).lazy.compactMap(HeldID.init)) } }
            return nil
        case "want":
            let object = m.object.flatMap { ObjectKey.isID($0) ? $0 : nil }
            if let host, let object { watch(host.reached([object], remember: true), for: peer, host: host) }
            var answer = SwarmMessage(type: "peers")
            answer.rid = m.rid
            answer.object = m.object
            answer.peers = object.map { peers(holding: $0, for: peer) } ?? []
            return answer
        case "report":
            // A report naming no peer id a login could have (a 4 MiB one, or one with line
            // breaks) is dropped unlogged: each wrote the log as much, or forged lines in it.
            if let bad = m.peerId, Self.isPeerID(bad), let object = m.object, ObjectKey.isID(object) { report(bad, object: object, piece: m.piece, by: peer) }
            return nil
        case "changed":
            if let host, let ref = m.ref, let piece = m.piece, piece >= 0 { Task { await host.recheck(ref, piece: piece) } }
            return nil
        default:
            return nil
        }
    }

    /// `prepare`s of one connection waiting to be queued, at most.
    static let maxQueuedPrepares = 64
    /// Objects in the `prepare`s of one connection waiting to be queued, at most (a message
    /// may hold 4 MiB of them).
    public static let maxQueuedPrepareObjects = 100_000

    /// The objects of a `prepare` that the tracker takes.
    static func objectsTaken(_ m: SwarmMessage) -> Int { min(m.refs?.count ?? 0, SwarmMessage.maxPrepareRefs) }

    /// The objects of one connection's `prepare`s waiting to be queued, and its `sums`
    /// waiting for their answers.
    final class Backlog: Sendable {
        let objects: BoundedCount
        let sums: BoundedCount

        init(objects: Int, sums: Int) {
            self.objects = BoundedCount(objects)
            self.sums = BoundedCount(sums)
        }
    }

    /// Queues the objects of a `prepare` for preparation, then watches the first of them for
    /// the node (`watch`).
    private func prepare(_ m: SwarmMessage, from peer: String) {
        guard let host, let refs = m.refs, !refs.isEmpty else { return }
        let ahead = Array(refs.prefix(SwarmMessage.maxPrepareRefs))
        let preparing = Set(host.prepare(ahead, whole: m.whole ?? false, retry: m.retry ?? false).map(\.key.id))
        watch(Array(ahead.prefix(Self.pushAhead)), preparing: preparing, for: peer, host: host)
    }


    /// Read-ahead objects whose readiness a node is told of unasked: the first of a playlist's,
    /// where its players start (the rest come by prefetch and `sums` as they play).
    static let pushAhead = 64
    /// Objects one session may be watching at once.
    static let maxWatched = 4096

    /// Objects read-ahead started preparing as `peer`'s players went on: the first of them are
    /// watched for it, so their checksums reach it unasked once ready.
    private func watch(_ released: [ObjectRef], for peer: String, host: any TrackerHost) {
        guard !released.isEmpty else { return }
        let refs = Array(released.prefix(Self.pushAhead))
        watch(refs, preparing: Set(refs.map(\.key.id)), for: peer, host: host)
    }

    /// What follows a `prepare`: the checksums (and holders) of the objects among `refs` that
    /// are ready go to `peer` now, unasked; those being prepared (`preparing`) are watched and
    /// go to it when they are ready (`preparationEnded`). Its players' first requests then need
    /// no round trip here. One outside the read-ahead window is not watched: it would never
    /// end its preparation, and its watch would stay to the session's end.
    private func watch(_ refs: [ObjectRef], preparing: Set<String>, for peer: String, host: any TrackerHost) {
        // Watched first, then looked up: an object that becomes ready in between is pushed
        // twice rather than never.
        let send = state.withLock { s -> (@Sendable (String) async throws -> Void)? in
            guard var session = s.sessions[peer] else { return nil }
            for ref in refs where session.watched.count < Self.maxWatched && preparing.contains(ref.key.id) {
                session.watched.insert(ref.key.id)
            }
            s.sessions[peer] = session
            return session.send
        }
        guard let send else { return }
        let ready = refs.compactMap { ref in host.readyAnswer(ref).map { (ref, $0) } }
        guard !ready.isEmpty else { return }
        state.withLock { s in s.sessions[peer]?.watched.subtract(ready.map(\.0.key.id)) }
        push(ready, to: peer, send: send)
    }

    /// The preparation of `ref` ended: no node watches it any longer, and if it made the object
    /// ready, its checksums and holders go to every node that did.
    public func preparationEnded(_ ref: ObjectRef) {
        let id = ref.key.id
        let watchers = state.withLock { s -> [(String, @Sendable (String) async throws -> Void)] in
            var found: [(String, @Sendable (String) async throws -> Void)] = []
            for (peer, session) in s.sessions where session.watched.contains(id) {
                s.sessions[peer]?.watched.remove(id)
                found.append((peer, session.send))
            }
            return found
        }
        guard !watchers.isEmpty, let answer = host?.readyAnswer(ref) else { return }
        for (peer, send) in watchers { push([(ref, answer)], to: peer, send: send) }
    }

    /// The registry dropped copy `copy` of object `objectID` (the origin's changed): no node
    /// counts as holding it any longer, and each that did is told, so that it drops the copy
    /// too rather than serve it to its players. The copy is remembered for
    /// `droppedCopyMemory`: a node that announces the object meanwhile (it was away, or its
    /// `have` was on its way) is told too; one that holds the new copy keeps it.
    public func copyDropped(_ objectID: String, copy: String) {
        let now = ContinuousClock.now
        let holders = state.withLock { s -> [@Sendable (String) async throws -> Void] in
            s.droppedCopies.keepUnder(Self.maxDroppedCopies) { now - $0.at < Self.droppedCopyMemory }
            // The last few (a copy that changed twice while a node was away: it holds the first).
            let earlier = s.droppedCopies[objectID].map { now - $0.at < Self.droppedCopyMemory ? $0.copies : [] } ?? []
            s.droppedCopies[objectID] = (Array((earlier.filter { $0 != copy } + [copy]).suffix(Self.droppedCopiesPerObject)), now)
            var found: [@Sendable (String) async throws -> Void] = []
            guard let held = HeldID(objectID) else { return found }
            // The holders first: changed while the loop held the table, each holder's set of
            // objects would be copied whole.
            for peer in s.sessions.compactMap({ $0.value.objects.contains(held) ? $0.key : nil }) {
                s.changeObjects(of: peer) { _ = $0.remove(held) }
                if let send = s.sessions[peer]?.send { found.append(send) }
            }
            return found
        }
        let text = Self.dropped(objectID, copy: copy)
        for send in holders { Task { try? await send(text) } }
    }

    /// How long a dropped copy is told to nodes that announce its object, and how many are kept.
    static let droppedCopyMemory: Duration = .seconds(3600)
    static let maxDroppedCopies = 4096
    static let droppedCopiesPerObject = 4

    static func dropped(_ objectID: String, copy: String) -> String {
        var m = SwarmMessage(type: "dropped")
        m.object = objectID
        m.copy = copy
        return m.json
    }

    /// Tells `peer`, which announced `objects`, of the copies of them the registry dropped lately.
    private func tellDropped(_ objects: [String], to peer: String) {
        let now = ContinuousClock.now
        let (send, told) = state.withLock { s -> ((@Sendable (String) async throws -> Void)?, [String]) in
            guard !s.droppedCopies.isEmpty else { return (nil, []) }
            let told = objects.flatMap { id in
                s.droppedCopies[id].map { now - $0.at < Self.droppedCopyMemory ? $0.copies.map { Self.dropped(id, copy: $0) } : [] } ?? []
            }
            return (s.sessions[peer]?.send, told)
        }
        guard let send, !told.isEmpty else { return }
        Task { for text in told { try? await send(text) } }
    }

    /// A `sums` without a request id: unasked checksums of objects `peer` asked to prepare, one
    /// message for all of them.
    private func push(_ ready: [(ObjectRef, ChecksumAnswer)], to peer: String, send: @escaping @Sendable (String) async throws -> Void) {
        var m = SwarmMessage(type: "sums")
        m.items = ready.map { ref, answer in
            var item = SwarmMessage(type: "sums")
            item.ref = ref
            item.object = ref.key.id
            item.answer = answer
            item.peers = peers(holding: ref.key.id, for: peer)
            return item
        }
        let text = m.json
        Task { try? await send(text) }
    }

    /// The longest `readyWithin` a `sums` may ask for, in milliseconds (a node's longest peer deadline).
    static let maxReadyWithin = 60_000

    private func answerChecksums(
        _ m: SwarmMessage, from peer: String, send: @escaping @Sendable (String) async throws -> Void, answered: @escaping @Sendable () -> Void
    ) {
        state.withLock { s in s.sessions[peer]?.lastSeen = .now }
        Task {
            defer { answered() }
            var answer = SwarmMessage(type: "sums")
            answer.rid = m.rid
            answer.object = m.ref?.key.id
            if let ref = m.ref, let host {
                let sums: ChecksumAnswer
                if m.ifReady == true {
                    // A prefetch: no player reached the object, so nothing is prepared for it.
                    sums = host.readyAnswer(ref) ?? ChecksumAnswer(state: .unavailable, reason: "not ready (asked only if ready)")
                } else {
                    self.watch(host.reached([ref.key.id], remember: true), for: peer, host: host)
                    let readyWithin = Duration.milliseconds(min(max(m.readyWithin ?? 0, 0), Self.maxReadyWithin))
                    sums = await host.checksums(ref, urgent: m.urgent ?? true, waitForOrigin: m.wait ?? true, readyWithin: readyWithin)
                }
                answer.answer = sums
                // Ready: the holders come along, so the node needs no want before its first piece.
                if sums.state == .ready { answer.peers = peers(holding: ref.key.id, for: peer) }
            } else {
                answer.answer = ChecksumAnswer(state: .unavailable, reason: host == nil ? "this tracker has no registry" : "no object named")
            }
            try? await send(answer.json)
        }
    }

    /// Up to `peersPerWant` holders of `object` other than `requester`, least handed out first.
    func peers(holding object: String, for requester: String) -> [SwarmPeer] {
        let expiry = Int64(Date().timeIntervalSince1970) + 60
        let now = ContinuousClock.now, date = Date()
        let held = HeldID(object)
        let chosen = state.withLock { s -> [(String, String)] in
            guard let held else { return [] }
            let holders = s.sessions.filter { id, session in
                id != requester && session.objects.contains(held) && !s.isBanned(key: session.banKey, at: date)
                    && s.suspended[Self.suspensionKey(id, object)].map { now - $0.since >= Self.maxSuspension } ?? true
            }
                .sorted { ($0.value.handouts, $0.key) < ($1.value.handouts, $1.key) }
                .prefix(peersPerWant)
            for (id, _) in holders { s.sessions[id]?.handouts += 1 }
            return holders.map { ($0.key, $0.value.url) }
        }
        var found = chosen
        // The registry's prepared copy is the swarm's first seed: asked after the nodes, so
        // that it serves what they do not hold yet.
        if let host, host.seedPeerID != requester, host.holds(object) { found.append((host.seedPeerID, host.seedURL)) }
        return found.map { id, url in
            SwarmPeer(peerId: id, url: url, token: PieceToken(requester: requester, holder: id, objectID: object, expiry: expiry).encoded(secret: secret))
        }
    }

    /// Reports waiting for their audit, at most (more are dropped).
    static let maxQueuedAudits = 64
    /// How often one reporter's reports of one holder and object are audited, at most.
    static let auditInterval: Duration = .seconds(10)
    /// How long a reported holder is not handed out for the object, at most, while its audit
    /// waits (behind others) or runs: reports cannot keep an honest holder out of the swarm.
    public static let maxSuspension: Duration = .seconds(10)

    static func suspensionKey(_ holder: String, _ object: String) -> String { holder + "\u{0}" + object }

    /// A node says `bad` sent it a bad piece. A report is no proof: the node could be wrong,
    /// or lie to have an honest peer banned. So the registry asks `bad` for that piece itself,
    /// naming the reporter (`audit`); only bytes that fail the check count against it. Until
    /// then (`maxSuspension` at most) `bad` is not handed out as a holder of the object. A
    /// report is logged and dropped if it names the reporter itself, the seed (it sends only
    /// pieces it verified), no piece of a ready object, or a report this reporter made of the
    /// same holder and object within `auditInterval`, or if the reporter has
    /// `maxAuditsPerReporter` waiting.
    func report(_ bad: String, object: String, piece: Int?, by reporter: String) {
        let now = ContinuousClock.now
        var queued = false
        if let host, let piece, bad != reporter, bad != host.seedPeerID, host.auditable(object, piece: piece) {
            let report = state.withLock { s -> Report? in
                let key = "\(reporter) \(bad) \(object)"
                s.audited.keepUnder(Self.maxAudited) { now - $0 < Self.auditInterval }
                guard let url = s.sessions[bad]?.url, s.audited[key].map({ now - $0 >= Self.auditInterval }) ?? true,
                    s.waitingAudits[reporter, default: 0] < Self.maxAuditsPerReporter
                else { return nil }
                s.audited[key] = now
                s.waitingAudits[reporter, default: 0] += 1
                s.suspended[Self.suspensionKey(bad, object), default: (0, now)].audits += 1
                return Report(holder: bad, holderURL: url, object: object, piece: piece, reporter: reporter)
            }
            if let report {
                if case .enqueued = audits.yield(report) {
                    queued = true
                } else {
                    auditEnded(report, holds: true)
                }
            }
        }
        // A report of a peer not logged in is not worth a warning: a node sending them at its
        // message rate wrote a line each (190 KB a second).
        let known = queued || state.withLock { $0.sessions[bad] != nil }
        logger.log(
            level: known ? .warning : .debug, "bad piece reported",
            metadata: [
                "peer": "\(bad)", "object": "\(object)", "piece": "\(piece.map(String.init) ?? "-")", "by": "\(reporter)",
                "audit": "\(queued ? "queued" : "none")",
            ])
    }

    /// Keys of recent audits kept, at most.
    static let maxAudited = 4096
    /// Audits one reporter may have waiting at once.
    static let maxAuditsPerReporter = 4

    /// An audit of `report` ended (or was never run): the reporter may report again, and the
    /// holder is handed out for the object again once no audit of it waits, unless this one
    /// found a bad piece (`holds` false: it no longer counts as holding the object).
    private func auditEnded(_ report: Report, holds: Bool) {
        state.withLock { s in
            s.waitingAudits[report.reporter, default: 1] -= 1
            if s.waitingAudits[report.reporter] ?? 0 <= 0 { s.waitingAudits[report.reporter] = nil }
            let key = Self.suspensionKey(report.holder, report.object)
            s.suspended[key]?.audits -= 1
            if s.suspended[key]?.audits ?? 0 <= 0 { s.suspended[key] = nil }
            if !holds, let held = HeldID(report.object) { s.changeObjects(of: report.holder) { _ = $0.remove(held) } }
        }
    }

    /// Asks the holder a report names for the piece, as the reporter did, and holds bad bytes
    /// against it: it no longer counts as holding the object, and after `banAfter` proven
    /// bad pieces within `banTime` it is banned for `banTime` (dropped now, refused at login,
    /// across restarts of a tracker with an `OffenceLog`).
    private func audit(_ report: Report, host: any TrackerHost) async {
        let expiry = Int64(Date().timeIntervalSince1970) + 60
        let token = PieceToken(requester: report.reporter, holder: report.holder, objectID: report.object, expiry: expiry).encoded(secret: secret)
        let verdict = await host.audit(report.object, piece: report.piece, holderURL: report.holderURL, requester: report.reporter, token: token)
        auditEnded(report, holds: !verdict.isBad)
        var metadata: Logger.Metadata = ["peer": "\(report.holder)", "object": "\(report.object)", "piece": "\(report.piece)", "by": "\(report.reporter)"]
        switch verdict {
        case .bad(let why):
            let now = Date(), memory = banMemory, key = Self.banKey(report.holderURL)
            let (record, unkept) = offenceWrites.withLock { _ -> (PeerOffences, (any Error)?) in
                let record = state.withLock { s -> PeerOffences in
                    var r = s.offences[key].flatMap { $0.matters(at: now, memory: memory) ? $0 : nil } ?? PeerOffences(count: 0, last: now)
                    r.count += 1
                    r.last = now
                    if r.count >= banAfter {
                        r.bannedUntil = now.addingTimeInterval(memory)
                        for (id, session) in s.sessions where session.banKey == key { s.setSession(id, nil) }
                    }
                    s.offences[key] = r
                    return r
                }
                do { try offenceLog?.record(record, for: key) } catch { return (record, error) }
                return (record, nil)
            }
            if let unkept {
                logger.warning("cannot keep a peer's offences: a restart forgets them", metadata: ["url": "\(key)", "error": "\(unkept)"])
            }
            metadata["url"] = "\(report.holderURL)"
            metadata["why"] = "\(why)"
            metadata["offences"] = "\(record.count)"
            metadata["banned"] = "\(record.bannedUntil.map { "until \(ISO8601DateFormatter().string(from: $0))" } ?? "no")"
            logger.warning("bad piece confirmed", metadata: metadata)
        case .intact:
            logger.warning("bad piece not confirmed: the peer sent the piece intact", metadata: metadata)
        case .inconclusive(let why):
            metadata["why"] = "\(why)"
            logger.info("bad piece report left open", metadata: metadata)
        }
    }

    /// `banTime` in seconds, as offence records count it.
    private var banMemory: TimeInterval { Double(banTime.milliseconds) / 1000 }

    /// What audits proved against peers and still counts, by ban key (`banKey`).
    var offenceRecords: [String: PeerOffences] { state.withLock { $0.offences } }

    /// What audits proved against peers and still counts at `now` (a ban that has not run
    /// out, offences within `banTime`), by ban key, for the operator (`GET /bans`).
    public func offences(at now: Date = Date()) -> [(url: String, record: PeerOffences)] {
        let memory = banMemory
        return state.withLock { s in s.offences.filter { $0.value.matters(at: now, memory: memory) } }
            .map { (url: $0.key, record: $0.value) }.sorted { $0.url < $1.url }
    }

    /// Forgets what was proven against the peers at `url` (any spelling `banKey` takes to
    /// the same key): a ban is lifted at once, and the next offence counts from one. The
    /// operator's (`DELETE /bans`), for a node whose disk lied and was mended. Returns the
    /// record forgotten (nil: none counted). A node banned from `url` was refused at login:
    /// it is let in at its next attempt. Throws when the tracker's database cannot forget it
    /// (the ban is still lifted until the tracker restarts).
    @discardableResult
    public func liftBan(_ url: String, at now: Date = Date()) throws -> PeerOffences? {
        let key = Self.banKey(url), memory = banMemory
        let lifted = try offenceWrites.withLock { _ in
            let lifted = state.withLock { s in s.offences.removeValue(forKey: key) }
            try offenceLog?.record(nil, for: key)
            return lifted
        }
        return lifted.flatMap { $0.matters(at: now, memory: memory) ? $0 : nil }
    }

    /// Ends sessions silent for three heartbeats (their connections end on their next message).
    /// Each as `setSession` ends it: its objects leave the count of all sessions' (a filter of
    /// the table left them in it for good, and sessions that went silent one after another
    /// filled `maxAnnouncedObjects`: no node's `have` was taken any more).
    public func expireSilent(now: ContinuousClock.Instant = .now) {
        state.withLock { s in
            for (peer, session) in s.sessions where now - session.lastSeen > silentAfter { s.setSession(peer, nil) }
        }
    }
}

/// Messages (or bytes) per second with a burst: what one connection may send.
struct TokenBucket {
    let rate: Double
    let burst: Double
    var tokens: Double
    var last = ContinuousClock.now

    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = burst
        tokens = burst
    }

    mutating func take() -> Bool {
        refill(at: .now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// Spends `cost` tokens, into debt if need be, and returns how long until the debt is paid
    /// (zero when there was enough).
    mutating func spend(_ cost: Double, at now: ContinuousClock.Instant = .now) -> Duration {
        refill(at: now)
        tokens -= cost
        guard tokens < 0 else { return .zero }
        return .nanoseconds(Int64((-tokens / rate * 1e9).rounded(.up)))
    }

    private mutating func refill(at now: ContinuousClock.Instant) {
        let elapsed = max(now - last, .zero)
        last = max(last, now)
        tokens = min(burst, tokens + rate * (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
    }
}

/// What a tracker runs in: the node whose checksum registry answers `sums` and `prepare`, and
/// whose piece store is the first seed of every object it prepared.
public protocol TrackerHost: Sendable {
    /// The seed's peer id (its piece tokens name it as holder).
    var seedPeerID: String { get }
    /// Where peers fetch the seed's pieces.
    var seedURL: String { get }
    /// Whether the seed holds pieces of an object.
    func holds(_ objectID: String) -> Bool
    /// The checksums of `ref`, preparing it first when need be (`urgent`: a player waits). Not
    /// ready, the answer waits for the origin's first answer to the preparation only if
    /// `waitForOrigin`, and then for up to `readyWithin` (from the call) when the preparation
    /// is under way and its progress says it will end by then.
    func checksums(_ ref: ObjectRef, urgent: Bool, waitForOrigin: Bool, readyWithin: Duration) async -> ChecksumAnswer
    /// Queues a playlist's objects for preparation ahead of players, in order: those within
    /// the read-ahead window, or every one if `whole`; for an operator's prepare (`retry`),
    /// what failed or was cancelled is queued again. Returns those of `refs` being prepared
    /// or prepared for it.
    func prepare(_ refs: [ObjectRef], whole: Bool, retry: Bool) -> [ObjectRef]
    /// Players of the swarm reached these objects (nodes asked for them, wanted or announced
    /// them): read-ahead moves on. Returns the objects it now prepares; those of a playlist not
    /// known yet are remembered for its plan if `remember`.
    func reached(_ objectIDs: [String], remember: Bool) -> [ObjectRef]
    /// The checksums of `ref` if they are ready now (never prepares, never waits).
    func readyAnswer(_ ref: ObjectRef) -> ChecksumAnswer?
    /// A node says the origin's copy of piece `piece` of `ref` no longer matches: the host
    /// fetches that piece from the origin itself and, if it does not match either, drops the
    /// checksums and prepares the object again. A node cannot make it drop a good copy.
    func recheck(_ ref: ObjectRef, piece: Int) async
    /// Asks the holder at `holderURL` for piece `piece` of object `objectID` as `requester`
    /// did (with `token`, made for it) and checks the bytes against the registry's checksum.
    func audit(_ objectID: String, piece: Int, holderURL: String, requester: String, token: String) async -> AuditVerdict
    /// Whether piece `piece` of object `objectID` can be audited: its checksums are ready here.
    func auditable(_ objectID: String, piece: Int) -> Bool
}

/// What asking a reported peer for the piece again showed.
public enum AuditVerdict: Sendable, Equatable {
    /// It sent bytes that fail the piece's checksum: why.
    case bad(String)
    /// It sent the piece intact.
    case intact
    /// It could not be told: no checksums, the peer refused, broke off or is gone (why).
    case inconclusive(String)

    var isBad: Bool { if case .bad = self { true } else { false } }
}
