import Foundation
import HummingbirdWSClient
import Logging
import NIOPosix
import ServiceLifecycle
import Synchronization

/// A node's connection to the tracker (SPEC section 3): logs in with an HMAC-signed proof,
/// pings every heartbeat, announces what the node holds (all of it at each login, then as it
/// changes), asks for peers, and reconnects with exponential backoff and jitter whenever the
/// tracker goes away — while it is away the node serves from its cache and the CDN.
public final class TrackerLink: Service, Sendable {
    public struct Configuration: Sendable {
        public var url: String
        public var appID: String
        public var secret: String
        /// Renewed when the tracker says another node logs in with it (a copied cache folder).
        public var peerID: PeerID
        /// This node's public URL, where peers fetch pieces (asked at each login: it is known
        /// once the server is bound).
        public var publicURL: @Sendable () -> String
        public var minBackoff: Duration = .milliseconds(250)
        public var maxBackoff: Duration = .seconds(15)
        /// How long a want waits for the tracker's answer.
        public var wantTimeout: Duration = .seconds(2)
        /// How long a request for checksums waits (the tracker may wait on the origin first).
        public var checksumTimeout: Duration = .seconds(12)
        /// How long a request for checksums the tracker answers at once waits (a player is
        /// sent to the origin after that: a stuck tracker never holds playback up for long).
        public var quickChecksumTimeout: Duration = .seconds(1)

        public init(url: String, appID: String, secret: String, peerID: PeerID, publicURL: @escaping @Sendable () -> String) {
            self.url = url
            self.appID = appID
            self.secret = secret
            self.peerID = peerID
            self.publicURL = publicURL
        }
    }

    struct State {
        var send: (@Sendable (String) async throws -> Void)?
        var nextRID = 0
        /// Requests waiting for the tracker's answer, by request id.
        var waiting: [Int: CheckedContinuation<SwarmMessage?, Never>] = [:]
        var logins = 0
        /// Read-ahead playlists asked for while the tracker was away, sent at the next login
        /// (a VOD player reads its playlist once, so it would not be asked for again).
        var unsent: [[ObjectRef]] = []
        /// Where checksums the tracker sends unasked go.
        var ready: (@Sendable ([(ref: ObjectRef, answer: ChecksumAnswer, peers: [SwarmPeer])]) -> Void)?
        /// Where the copies the registry dropped go.
        var dropped: (@Sendable (_ objectID: String, _ copy: String) -> Void)?
        /// When the tracker first refused this node's id as in use from another URL, since the
        /// last login (`peerIDInUse`).
        var inUseSince: ContinuousClock.Instant?
        /// Why the tracker refused the last login for a setting (a wrong app id or secret, a
        /// clock far off, a bad peer URL), until a login is taken.
        var refusal: String?
        /// When the tracker last sent anything.
        var lastHeard = ContinuousClock.now
        /// When a ping found the tracker silent (`probeSilence`), if nothing was heard since:
        /// requests are not sent then, and fail at once, until it is heard again or the
        /// connection ends.
        var silentSince: ContinuousClock.Instant?

        /// Whether the tracker went silent and was not heard since.
        var isSilent: Bool { silentSince.map { lastHeard < $0 } ?? false }
    }

    public let configuration: Configuration
    /// Read-ahead playlists kept for the next login, at most.
    static let maxUnsent = 32
    /// The objects to announce at each login.
    private let held: @Sendable () -> [String]
    private let state = Mutex(State())
    private let logger: Logger

    public init(configuration: Configuration, held: @escaping @Sendable () -> [String], logger: Logger) {
        self.configuration = configuration
        self.held = held
        self.logger = logger
    }

    /// Hands `handler` the checksums (and holders) the tracker sends unasked: those of objects
    /// the node asked it to prepare, once ready.
    public func onReady(_ handler: @escaping @Sendable ([(ref: ObjectRef, answer: ChecksumAnswer, peers: [SwarmPeer])]) -> Void) {
        state.withLock { $0.ready = handler }
    }

    /// Hands `handler` each copy of an object the registry dropped (by its checksums'
    /// fingerprint): the origin's copy changed.
    public func onDropped(_ handler: @escaping @Sendable (_ objectID: String, _ copy: String) -> Void) {
        state.withLock { $0.dropped = handler }
    }

    /// Whether the node is logged in now.
    public var isConnected: Bool { state.withLock { $0.send != nil } }
    /// Successful logins so far.
    public var logins: Int { state.withLock { $0.logins } }
    /// Why the tracker refused this node's last login, while it does (nil once one is taken,
    /// and while the tracker is only away).
    public var loginRefusal: String? { state.withLock { $0.refusal } }

    public func run() async throws {
        // Graceful shutdown cancels the session and the reconnect loop.
        try? await cancelWhenGracefulShutdown { try await self.reconnectLoop() }
    }

    private func reconnectLoop() async throws {
        var failures = 0
        while !Task.isCancelled {
            let started = ContinuousClock.now
            let outcome = await session()
            if Task.isCancelled { break }
            // A session that lasted a while resets the backoff.
            if ContinuousClock.now - started > .seconds(30) { failures = 0 }
            failures += 1
            let delay = Self.backoff(failures, min: configuration.minBackoff, max: configuration.maxBackoff)
            logger.warning("tracker connection ended; reconnecting", metadata: ["reason": "\(outcome)", "in_ms": "\(delay.milliseconds)"])
            try await Task.sleep(for: delay)
        }
    }

    /// The wait before reconnect attempt `n` (1-based): doubling from `min` up to `max`, times
    /// a random factor in 0.5...1 so that nodes do not come back in lockstep.
    static func backoff(_ n: Int, min: Duration, max: Duration) -> Duration {
        let doubled = min * Double(1 << Swift.min(n - 1, 20))
        return Swift.min(doubled, max) * Double.random(in: 0.5...1)
    }

    /// What a session's login watchdog, its connection and its end tell each other.
    final class SessionMarks: Sendable {
        let welcomed = Atomic<Bool>(false)
        let timedOut = Atomic<Bool>(false)
        /// The connection's task returned.
        let ended = Atomic<Bool>(false)
        /// Why the connection ended, when it says more than that it closed.
        let reason = Mutex<String>("closed")
    }

    /// How long a connection may take to be welcomed (TCP, the upgrade, the login's answer).
    static let loginTimeout = Duration.seconds(10)
    /// How long the tracker may take to answer the WebSocket close of a connection that ends
    /// (a stop, a login that timed out): a frozen tracker answers none.
    static let closeTimeout = Duration.seconds(2)
    /// How long after it was asked to end a connection may take before its event loop is shut
    /// down under it: past the close handshake, only one still waiting for its upgrade's
    /// answer, which no cancellation reaches.
    static let forcedEndAfter = closeTimeout + .seconds(1)

    /// One connection, login to close. Returns why it ended.
    ///
    /// The connection runs on an event loop of its own, in a task of its own. It is ended by
    /// cancelling that task (the WebSocket client then closes it, with a close handshake of
    /// `closeTimeout` at most) when no welcome came within `loginTimeout`, or when the link is
    /// cancelled (a stop); if it has not ended `forcedEndAfter` later, its event loop is shut
    /// down. A tracker (or a balancer before it) that took the connection and then answered
    /// nothing, or closed its side cleanly, left the upgrade waiting for good: the WebSocket
    /// client has no timeout for it and cancelling does not reach it, so the node never logged
    /// in again and a SIGTERM did not end it. The loop is not shut down at once: under an open
    /// WebSocket, the client's close then waited for good on the loop that was gone, and a
    /// SIGTERM did not end a node logged in to its tracker.
    private func session() async -> String {
        let loop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let marks = SessionMarks()
        let connection = Task { try await self.connect(loop: loop, marks: marks) }
        let watchdog = Task {
            try await Task.sleep(for: Self.loginTimeout)
            guard !marks.welcomed.load(ordering: .acquiring) else { return }
            marks.timedOut.store(true, ordering: .releasing)
            Self.end(connection, loop: loop, marks: marks)
        }
        defer {
            watchdog.cancel()
            loop.shutdownGracefully { _ in }
        }
        do {
            try await withTaskCancellationHandler {
                try await connection.value
            } onCancel: {
                Self.end(connection, loop: loop, marks: marks)
            }
        } catch {
            marks.reason.withLock { $0 = "\(error)" }
        }
        if marks.timedOut.load(ordering: .acquiring) { return "no welcome within \(Self.loginTimeout)" }
        return marks.reason.withLock { $0 }
    }

    /// Ends a session's connection (`session`).
    private static func end(_ connection: Task<Void, any Error>, loop: MultiThreadedEventLoopGroup, marks: SessionMarks) {
        connection.cancel()
        Task {
            try await Task.sleep(for: forcedEndAfter)
            if !marks.ended.load(ordering: .acquiring) { loop.shutdownGracefully { _ in } }
        }
    }

    /// The connection of one session, on `loop`: logs in, then sends and takes messages until
    /// it closes. Why it ended goes in `marks.reason`.
    private func connect(loop: MultiThreadedEventLoopGroup, marks: SessionMarks) async throws {
        defer { marks.ended.store(true, ordering: .releasing) }
        let c = configuration
        // WebSocket pings every `autoPing`: a tracker that answers none (its host hung, a
        // network black hole; the connection stays open) has the connection closed, and the
        // node serves without it and connects again. Every request to it waited its whole
        // timeout, for good (12 s for each new live segment; found by an attack).
        let ws = WebSocketClientConfiguration(closeTimeout: Self.closeTimeout, autoPing: .enabled(timePeriod: Self.autoPing))
        _ = try await WebSocketClient.connect(url: c.url, configuration: ws, eventLoopGroup: loop, logger: logger) { inbound, outbound, _ in
            // A message larger than a frame (16 KiB: a login's `have`, a long `prepare`)
            // goes out as several, one message at a time so that no other comes between.
            let send = SerialSender { text in try await outbound.writeTextMessage(text) }.send
            try await send(SwarmMessage.login(LoginProof.sign(appID: c.appID, peerID: c.peerID.current, secret: c.secret), url: c.publicURL()).json)
            // Checksums of a 4 GiB object in 256 KiB pieces are about 1.1 MB of JSON.
            var messages = inbound.messages(maxSize: 8 << 20).makeAsyncIterator()
            guard case .text(let first)? = try await messages.next(), let welcome = SwarmMessage(json: first) else { return }
            marks.welcomed.store(true, ordering: .releasing)
            guard welcome.type == "welcome" else {
                marks.reason.withLock { $0 = "refused: \(welcome.reason ?? "?")" }
                if welcome.reason == LoginRefusal.peerInUse.rawValue {
                    self.peerIDInUse(heardAgo: welcome.heardAgo)
                } else {
                    // A setting to mend (the app id, the secret, the clock, the peer URL), not
                    // a ban: a banned node still serves from its cache and the CDN.
                    let settings: [LoginRefusal] = [.unknownApp, .badSignature, .stale, .badURL, .badPeerID]
                    if let reason = welcome.reason, settings.contains(where: { $0.rawValue == reason }) {
                        self.state.withLock { $0.refusal = reason }
                    }
                    self.logger.error("tracker refused the login", metadata: ["reason": "\(welcome.reason ?? "?")"])
                }
                return
            }
            self.state.withLock { s in
                s.send = send
                s.logins += 1
                s.inUseSince = nil
                s.refusal = nil
            }
            self.logger.info("logged in to the tracker", metadata: ["tracker": "\(c.url)"])
            defer { self.disconnected() }
            for refs in self.state.withLock({ s in defer { s.unsent = [] }; return s.unsent }) {
                var m = SwarmMessage(type: "prepare")
                m.refs = refs
                try await send(m.json)
            }
            let objects = self.held()
            if !objects.isEmpty {
                try await self.send(type: "have", objects: objects, whole: true)
                // An object let go while the list went out (a large one goes in several
                // messages) had its `lost` sent before the message that named it, which the
                // tracker took after it: it is said again now.
                let still = Set(self.held())
                let gone = objects.filter { !still.contains($0) }
                if !gone.isEmpty { try await self.send(type: "lost", objects: gone) }
            }
            let beat = Duration.seconds(max(1, welcome.heartbeat ?? 10))
            let pinger = Task {
                while !Task.isCancelled {
                    try await Task.sleep(for: beat)
                    try await send(SwarmMessage(type: "ping").json)
                }
            }
            defer { pinger.cancel() }
            while let message = try await messages.next() {
                guard case .text(let text) = message, let m = SwarmMessage(json: text) else { continue }
                self.received(m)
            }
        }
    }

    /// The tracker refused this node's id: a session from another URL holds it. That session
    /// may be this node's own from before a restart at a new address, its connection not yet
    /// known to be dead (a host that lost power): it goes silent, and the tracker lets this
    /// node in under its id once it is. Or it is another node's, whose cache folder was copied
    /// from this one's (a cloned image): it is heard again after this node's first refusal
    /// (`heardAgo`), and this node takes a new id. A tracker that does not say when the
    /// session was heard gets the new id after a minute of refusals.
    private func peerIDInUse(heardAgo: Int?) {
        let now = ContinuousClock.now
        let renew = state.withLock { s -> Bool in
            guard let since = s.inUseSince else {
                s.inUseSince = now
                return false
            }
            let otherIsAlive = heardAgo.map { now - .milliseconds($0) > since } ?? (now - since > Self.renewAfterRefusals)
            if otherIsAlive { s.inUseSince = nil }
            return otherIsAlive
        }
        if renew {
            renewPeerID()
        } else {
            logger.warning(
                "the tracker says this node's peer id is logged in from another URL; waiting to see whether that session is this node's own, from before a restart",
                metadata: ["peer": "\(configuration.peerID.current)"])
        }
    }

    /// How long a tracker that does not say when the other session was heard refuses a node's
    /// id before the node takes a new one (past the three heartbeats it waits for a silent one).
    static let renewAfterRefusals = Duration.seconds(60)

    /// How often the connection to the tracker is pinged (WebSocket pings): one not answered
    /// by the next ends it, so a silent tracker is left within two of these.
    static let autoPing = Duration.seconds(4)

    /// Another node is logged in with this node's id from another URL: its cache folder was
    /// copied from this one (or this one's from it). This node takes a new id for the next
    /// login, so both are in the swarm; the pieces it holds are announced under the new id.
    private func renewPeerID() {
        let old = configuration.peerID.current
        let (new, notKept) = configuration.peerID.renew()
        logger.warning(
            "another node logs in with this node's peer id (a copied cache folder?); this one takes a new id",
            metadata: ["old": "\(old)", "new": "\(new)", "file": "\(configuration.peerID.file)"])
        if let notKept {
            logger.error("the new peer id could not be written; a restart takes the old one again", metadata: ["error": "\(notKept)"])
        }
    }

    private func received(_ m: SwarmMessage) {
        state.withLock { $0.lastHeard = .now }
        if m.type == "sums" && m.rid == nil {
            // Kept off this loop (the registry writes them through to its storage), so that
            // the answers players wait for are not queued behind them.
            let ready = (m.items ?? []).compactMap { item in
                item.ref.flatMap { ref in item.answer.flatMap { $0.state == .ready ? (ref: ref, answer: $0, peers: item.peers ?? []) : nil } }
            }
            if !ready.isEmpty, let handler = state.withLock({ $0.ready }) { Task { handler(ready) } }
            return
        }
        if m.type == "dropped" {
            if let id = m.object, let copy = m.copy, let handler = state.withLock({ $0.dropped }) { handler(id, copy) }
            return
        }
        guard m.type == "peers" || m.type == "sums" || m.type == "prepared", let rid = m.rid else { return }
        let waiter = state.withLock { $0.waiting.removeValue(forKey: rid) }
        waiter?.resume(returning: m)
    }

    private func disconnected() {
        let waiters = state.withLock { s -> [CheckedContinuation<SwarmMessage?, Never>] in
            s.send = nil
            s.silentSince = nil
            defer { s.waiting.removeAll() }
            return Array(s.waiting.values)
        }
        for w in waiters { w.resume(returning: nil) }
    }

    /// `whole`: a `have` of everything the node holds (at login), not of objects just stored.
    private func send(type: String, objects: [String], whole: Bool = false) async throws {
        for m in SwarmMessage.objectLists(type, objects, whole: whole) { try await send(m) }
    }

    /// Sends `m` if connected (no-op otherwise).
    private func send(_ m: SwarmMessage) async throws {
        guard let send = state.withLock({ $0.send }) else { return }
        try await send(m.json)
    }

    /// Tells the tracker the node now holds `objects` (no-op while disconnected: the next
    /// login announces everything held).
    public func announce(_ objects: [String]) async { try? await send(type: "have", objects: objects) }

    /// Tells the tracker the node no longer holds `objects`.
    public func withdraw(_ objects: [String]) async { try? await send(type: "lost", objects: objects) }

    /// Tells the tracker that `peer` sent piece `piece` of `object` and it failed verification
    /// (the tracker asks the peer for that piece itself before it holds it against it).
    public func report(_ peer: String, object: String, piece: Int) async {
        var m = SwarmMessage(type: "report")
        m.peerId = peer
        m.object = object
        m.piece = piece
        try? await send(m)
    }

    /// Tells the tracker that the origin's copy of piece `piece` of `ref` no longer matches the
    /// registry's checksum (the registry checks, and prepares the object again if so).
    public func changed(_ ref: ObjectRef, piece: Int) async {
        var m = SwarmMessage(type: "changed")
        m.ref = ref
        m.piece = piece
        try? await send(m)
    }

    /// Asks the tracker's registry to prepare a playlist's objects ahead of players: a window
    /// of them ahead of the objects its players reach, or every one if `whole`. While the
    /// tracker is away, a read-ahead one waits for the next login (the last 32 at most) and a
    /// `whole` one is dropped. The tracker keeps the playlists it read ahead across restarts,
    /// and sends the checksums of the first of them unasked: now for those that are ready,
    /// the others when they are.
    public func prepare(_ refs: [ObjectRef], whole: Bool = false) async {
        guard !refs.isEmpty else { return }
        let send = state.withLock { s in
            if s.send == nil && !whole {
                s.unsent.append(refs)
                if s.unsent.count > Self.maxUnsent { s.unsent.removeFirst() }
            }
            return s.send
        }
        guard let send else { return }
        let messages = SwarmMessage.prepares(refs, whole: whole)
        let carried = messages.reduce(0) { $0 + $1.count }
        if carried < refs.count {
            logger.notice(
                "prepare: more objects than the tracker takes at once", metadata: ["objects": "\(refs.count)", "sent": "\(carried)", "whole": "\(whole)"])
        }
        for m in messages {
            do { try await send(m.json) } catch { return }
        }
    }

    /// An operator's prepare (`swarmgate prepare`): every object now, and what failed or was
    /// cancelled again. Each message is answered (`prepared`) once the tracker has queued its
    /// objects, or at once with a reason when it is too busy to. Returns why the prepare was
    /// not taken (the tracker away, busy, or silent for `timeout` over all the messages); nil
    /// when every object was queued.
    public func prepareQueued(_ refs: [ObjectRef], timeout: Duration = .seconds(30)) async -> String? {
        let deadline = ContinuousClock.now + timeout
        for m in SwarmMessage.prepares(refs, whole: true, retry: true) {
            let left = deadline - .now
            guard left > .zero, !Task.isCancelled else { return "the tracker did not take it within \(timeout)" }
            guard let reply = await request(m.message, timeout: left) else {
                return isConnected ? "the tracker did not take it within \(timeout)" : "the tracker is away"
            }
            guard reply.type == "prepared" else { return "the tracker answered \(reply.type)" }
            if let busy = reply.reason { return "the tracker is busy: \(busy)" }
        }
        return nil
    }

    /// Peers holding `object`, best first; empty when the tracker is away or slow.
    public func want(_ object: String) async -> [SwarmPeer] {
        var want = SwarmMessage(type: "want")
        want.object = object
        return await request(want, timeout: configuration.wantTimeout)?.peers ?? []
    }

    /// The registry's checksums of `ref` (prepared first when need be) and, when ready, the
    /// peers holding it as a want would name them; `.unavailable` when the tracker is away or
    /// does not answer in time. Not ready, the tracker waits for the origin's first answer to
    /// the preparation only if `waitForOrigin`.
    public func checksums(
        _ ref: ObjectRef, urgent: Bool, waitForOrigin: Bool, readyWithin: Duration = .zero, ifReady: Bool = false
    ) async -> (answer: ChecksumAnswer, peers: [SwarmPeer]) {
        var m = SwarmMessage(type: "sums")
        m.ref = ref
        m.urgent = urgent
        m.wait = waitForOrigin
        if ifReady { m.ifReady = true }
        let ms = readyWithin.milliseconds
        if ms > 0 { m.readyWithin = Int(ms) }
        let timeout = (waitForOrigin ? configuration.checksumTimeout : configuration.quickChecksumTimeout) + .milliseconds(max(ms, 0))
        guard let reply = await request(m, timeout: timeout, probeSilence: waitForOrigin) else {
            let why = state.withLock { s in s.send == nil ? "the tracker is away" : s.isSilent ? "the tracker answers nothing" : "the tracker did not answer in time" }
            return (ChecksumAnswer(state: .unavailable, reason: why), [])
        }
        return (reply.answer ?? ChecksumAnswer(state: .unavailable, reason: "the tracker sent no checksums"), reply.peers ?? [])
    }

    /// How long a request that may wait long (`probeSilence`) waits with nothing heard from
    /// the tracker before it pings, and then how long for any answer.
    static let silenceProbe = (quiet: Duration.milliseconds(500), answer: Duration.milliseconds(1500))

    /// Sends `message` with a new request id and waits for the answer carrying it; nil when
    /// the tracker is away, goes away, or takes longer than `timeout`, or at once while it is
    /// silent (`State.silentSince`).
    ///
    /// `probeSilence`, for a request whose answer may take long (the tracker's registry waits
    /// for the origin): with nothing heard from the tracker for `silenceProbe.quiet` it is
    /// pinged, and if nothing comes within `silenceProbe.answer` the request gives up and the
    /// tracker counts as silent. A tracker that stopped answering (a hung host: the connection
    /// stays open until WebSocket pings end it, 4 to 8 s) held each such request its whole
    /// timeout (12 s): a first-sight object no playlist listed waited about 8 s for its 302.
    private func request(_ message: SwarmMessage, timeout: Duration, probeSilence: Bool = false) async -> SwarmMessage? {
        let rid = state.withLock { s in
            s.nextRID += 1
            return s.nextRID
        }
        var m = message
        m.rid = rid
        let text = m.json
        let timer = Task {
            try? await Task.sleep(for: timeout)
            let waiter = self.state.withLock { $0.waiting.removeValue(forKey: rid) }
            waiter?.resume(returning: nil)
        }
        defer { timer.cancel() }
        let probe = probeSilence ? Task { try await self.probe(rid) } : nil
        defer { probe?.cancel() }
        return await withCheckedContinuation { continuation in
            // Registered under the lock that finds the session, so that a session ending
            // meanwhile (which resumes every waiter) cannot miss this one.
            let send = state.withLock { s -> (@Sendable (String) async throws -> Void)? in
                guard let send = s.send, !s.isSilent else { return nil }
                s.waiting[rid] = continuation
                return send
            }
            guard let send else {
                continuation.resume(returning: nil)
                return
            }
            Task {
                do { try await send(text) } catch {
                    let waiter = self.state.withLock { $0.waiting.removeValue(forKey: rid) }
                    waiter?.resume(returning: nil)
                }
            }
        }
    }
}

extension TrackerLink {
    /// Ends request `rid` if the tracker is silent (`request`'s `probeSilence`).
    fileprivate func probe(_ rid: Int) async throws {
        let asked = ContinuousClock.now
        try await Task.sleep(for: Self.silenceProbe.quiet)
        guard let send = state.withLock({ $0.lastHeard < asked ? $0.send : nil }) else { return }
        let pinged = ContinuousClock.now
        // Not waited for: a send held by a full socket buffer is the silence itself.
        Task { try? await send(SwarmMessage(type: "ping").json) }
        try await Task.sleep(for: Self.silenceProbe.answer)
        let (waiter, first) = state.withLock { s -> (CheckedContinuation<SwarmMessage?, Never>?, Bool) in
            guard s.lastHeard < pinged, s.send != nil else { return (nil, false) }
            // Silent anew (not since a silence that ended: it went silent again).
            let first = !s.isSilent
            if first { s.silentSince = pinged }
            return (s.waiting.removeValue(forKey: rid), first)
        }
        if first { logger.warning("the tracker answers nothing, not even a ping: requests to it fail at once until it is heard again") }
        waiter?.resume(returning: nil)
    }
}

extension Duration {
    /// Whole milliseconds (truncated).
    public var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
