import Foundation
import Logging
import PieceStore
@testable import Swarm
import Synchronization
import TestScratch
import Testing

/// The tracker's sessions driven through its transport-neutral `serve`, as a WebSocket would.
@Suite("Tracker sessions")
struct TrackerSessionTests {
    /// A connection: messages in through `inbound`, the tracker's answers collected.
    final class Connection: Sendable {
        let inbound: AsyncThrowingStream<String, any Error>
        let feed: AsyncThrowingStream<String, any Error>.Continuation
        let sent = Mutex<[SwarmMessage]>([])

        init() { (inbound, feed) = AsyncThrowingStream.makeStream(of: String.self) }

        func waitFor(_ count: Int) async throws {
            let deadline = ContinuousClock.now + .seconds(10)
            while sent.withLock({ $0.count }) < count {
                guard ContinuousClock.now < deadline else { throw CancellationError() }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    static let secret = "session-secret"

    /// The object id (64 hex digits) of a test's object named `name`.
    static func id(_ name: String) -> String { ObjectKey(xresid: "t", host: "cdn.example.com", path: "/" + name).id }

    func open(_ tracker: SwarmTracker, peer: String, url: String = "http://x") async throws -> (Connection, Task<String, Never>) {
        let c = Connection()
        let run = Task { await tracker.serve(c.inbound) { text in c.sent.withLock { $0.append(SwarmMessage(json: text)!) } } }
        c.feed.yield(SwarmMessage.login(LoginProof.sign(appID: "app", peerID: peer, secret: Self.secret), url: url).json)
        try await c.waitFor(1)
        return (c, run)
    }

    /// Where a node serves pieces is a URL that piece paths can be appended to: others are
    /// refused at login (every node, and the tracker's audits, would fetch from them).
    @Test func aLoginWhosePeerURLIsNotAPlainHTTPURLIsRefused() async throws {
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, logger: Logger(label: "test"))
        for url in ["http://x/latest#", "http://x/?a=b", "http://user:pw@x", "file:///etc/passwd", "x", "http://"] {
            let c = Connection()
            let run = Task { await tracker.serve(c.inbound) { text in c.sent.withLock { $0.append(SwarmMessage(json: text)!) } } }
            c.feed.yield(SwarmMessage.login(LoginProof.sign(appID: "app", peerID: "odd", secret: Self.secret), url: url).json)
            #expect(await run.value == LoginRefusal.badURL.rawValue, "\(url)")
            #expect(c.sent.withLock { $0.first?.type } == "refused")
        }
        #expect(tracker.peerIDs.isEmpty)
        let (ok, _) = try await open(tracker, peer: "plain")
        #expect(ok.sent.withLock { $0.first?.type } == "welcome")
    }

    /// Bans are kept in the tracker's SQLite file, by peer URL: a tracker started on it refuses
    /// a login from a URL whose ban has not run out (whatever the peer id, however the URL's
    /// host is cased), lets in one whose ban has, and forgets offences older than a ban lasts
    /// (what `audit` counts from). A restart used to forget every ban.
    @Test func aBanOutlivesARestartUntilItRunsOut() async throws {
        let path = Scratch.path("offences", suffix: ".sqlite")
        let hour: TimeInterval = 3600
        do {
            let storage = try SQLiteRegistryStorage(path: path)
            try storage.record(PeerOffences(count: 3, last: Date(), bannedUntil: Date().addingTimeInterval(hour)), for: "http://liar.example:8080")
            try storage.record(PeerOffences(count: 3, last: Date(), bannedUntil: Date().addingTimeInterval(-1)), for: "http://ban-over.example")
            try storage.record(PeerOffences(count: 2, last: Date().addingTimeInterval(-2 * hour)), for: "http://old-offences.example")
            try storage.record(PeerOffences(count: 2, last: Date()), for: "http://recent-offences.example")
            try storage.record(PeerOffences(count: 1, last: Date()), for: "http://forgiven.example")
            try storage.record(nil, for: "http://forgiven.example")
        }
        let storage = try SQLiteRegistryStorage(path: path)
        #expect(
            Set(try storage.offences().keys)
                == ["http://liar.example:8080", "http://ban-over.example", "http://old-offences.example", "http://recent-offences.example"])
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, banTime: .seconds(3600), offenceLog: storage, logger: Logger(label: "test"))
        let logins = [
            ("any-id", "http://liar.example:8080", "refused"), ("other-id", "HTTP://Liar.EXAMPLE:8080/", "refused"),
            ("any-id-2", "http://liar.example:8081", "welcome"), ("n1", "http://ban-over.example", "welcome"),
            ("n2", "http://old-offences.example", "welcome"),
        ]
        for (peer, url, answer) in logins {
            let (c, _) = try await open(tracker, peer: peer, url: url)
            #expect(c.sent.withLock { $0.first?.type } == answer, "\(peer) at \(url)")
            #expect(c.sent.withLock { $0.first?.reason } == (answer == "refused" ? LoginRefusal.banned.rawValue : nil), "\(peer) at \(url)")
        }
        #expect(Set(tracker.offenceRecords.keys) == ["http://liar.example:8080", "http://recent-offences.example"], "what no longer counts is not kept")
        #expect(Set(try storage.offences().keys) == ["http://liar.example:8080", "http://recent-offences.example"], "nor in the file")
    }

    /// A peer id is what a node makes (`node-` and 13 more) or alike: 1 to 128 of
    /// `A-Z a-z 0-9 . _ : -`. Others are refused before they are logged or handed out (ids of
    /// 15 KB, or with terminal escapes, were both).
    @Test func aPeerIDOutsideItsAlphabetOrLengthIsRefused() async throws {
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, logger: Logger(label: "test"))
        for id in [String(repeating: "a", count: 129), "a b", "a\u{1B}[31mred", "peer/1", "é"] {
            let (c, run) = try await open(tracker, peer: id)
            #expect(c.sent.withLock { $0.first?.reason } == LoginRefusal.badPeerID.rawValue, "\(id)")
            #expect(await run.value == LoginRefusal.badPeerID.rawValue)
        }
        for id in [String(repeating: "a", count: 128), "node-1a2b3c4d-5e6f", "A.b_c:d-9"] {
            let (c, _) = try await open(tracker, peer: id)
            #expect(c.sent.withLock { $0.first?.type } == "welcome", "\(id)")
        }
        #expect(tracker.peerIDs.count == 3)
    }

    @Test func anExpiredSessionIsEndedAtItsNextMessage() async throws {
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, heartbeat: .seconds(1), logger: Logger(label: "test"))
        let (c, run) = try await open(tracker, peer: "quiet")
        #expect(c.sent.withLock { $0.first?.type } == "welcome")
        c.feed.yield(SwarmMessage(type: "ping").json)
        try await c.waitFor(2)
        #expect(c.sent.withLock { $0.last?.type } == "pong")
        tracker.expireSilent(now: .now + .seconds(60))
        #expect(tracker.peerIDs.isEmpty)
        c.feed.yield(SwarmMessage(type: "ping").json)
        #expect(await run.value == "session ended")
        #expect(c.sent.withLock { $0.last?.type } == "refused", "the node hears its session is gone and logs in again")
    }

    /// A session ended for silence takes its objects off the count of all sessions': a filter
    /// of the table left them in it for good, and sessions that went silent one after another
    /// filled `maxAnnouncedObjects` (no node's `have` was taken any more).
    @Test func aSilentSessionsObjectsLeaveTheCount() async throws {
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, logger: Logger(label: "test"))
        let (c, _) = try await open(tracker, peer: "stalled")
        var have = SwarmMessage(type: "have")
        have.objects = (0..<100).map { Self.id("silent-\($0)") }
        c.feed.yield(have.json)
        c.feed.yield(SwarmMessage(type: "ping").json)
        try await c.waitFor(2)
        #expect(tracker.load == (1, 100))
        tracker.expireSilent(now: .now + tracker.heartbeat * 3 + .seconds(1))
        #expect(tracker.load == (0, 0))
        c.feed.finish()
    }

    /// What goes to a node unasked waits for it within a bound: past it, it is left out. A node
    /// that read nothing had every such message wait in a task of its own, without end (a
    /// `prepare` of ready objects made a 1 MB push).
    @Test func unaskedMessagesToANodeThatReadsNothingAreBounded() async throws {
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, maxUnaskedBytes: 1000, logger: Logger(label: "test"))
        let c = Connection()
        let waiting = Atomic<Int>(0)
        _ = Task {
            await tracker.serve(c.inbound) { text in
                guard let m = SwarmMessage(json: text), m.type == "dropped" else {
                    c.sent.withLock { $0.append(SwarmMessage(json: text)!) }
                    return
                }
                // The node reads nothing more: the write never ends.
                waiting.add(1, ordering: .relaxed)
                try await Task.sleep(for: .seconds(30))
            }
        }
        c.feed.yield(SwarmMessage.login(LoginProof.sign(appID: "app", peerID: "deaf", secret: Self.secret), url: "http://x").json)
        try await c.waitFor(1)
        let id = Self.id("dropped-copy")
        tracker.copyDropped(id, copy: String(repeating: "c", count: 64))
        var have = SwarmMessage(type: "have")
        have.objects = [id]
        // Each `have` of the object tells the node of the dropped copy, unasked.
        for _ in 0..<20 { c.feed.yield(have.json) }
        c.feed.yield(SwarmMessage(type: "ping").json)
        try await c.waitFor(2)
        try await Task.sleep(for: .milliseconds(200))
        let size = Self.droppedSize(id)
        #expect(waiting.load(ordering: .relaxed) > 0)
        #expect(waiting.load(ordering: .relaxed) <= 1000 / size, "\(waiting.load(ordering: .relaxed)) of \(size) bytes each")
        c.feed.finish()
    }

    static func droppedSize(_ id: String) -> Int { SwarmTracker.dropped(id, copy: String(repeating: "c", count: 64)).utf8.count }

    /// Checksums whose length no object has (near 2^63, which overflows `PieceLayout`) are no
    /// checksums: a tracker, or anyone on a plain ws:// link, could crash a node with them.
    @Test func checksumsOfAnImpossibleLengthAreRefused() {
        var answer = ChecksumAnswer(state: .ready)
        answer.pieceSize = 1 << 20
        answer.digests = []
        for length in [Int64.max, Int64.max - 100, 1 << 50, -1] {
            answer.length = length
            #expect(answer.checksums == nil, "\(length)")
        }
    }

    /// A node may send `messagesPerSecond` messages a second, in bursts of twice that; a
    /// connection that floods past the burst is refused and closed.
    @Test func aConnectionSendingPastItsRateIsClosed() async throws {
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, messagesPerSecond: 20, logger: Logger(label: "test"))
        let (c, run) = try await open(tracker, peer: "busy")
        // Within the burst of 40 (the login took none): every ping is answered.
        for _ in 0..<30 { c.feed.yield(SwarmMessage(type: "ping").json) }
        try await c.waitFor(31)
        #expect(c.sent.withLock { $0.dropFirst().allSatisfy { $0.type == "pong" } })
        #expect(tracker.peerIDs == ["busy"])
        // Past it: the connection is refused and ends.
        for _ in 0..<100 { c.feed.yield(SwarmMessage(type: "ping").json) }
        #expect(await run.value == "rate limit")
        #expect(c.sent.withLock { $0.last?.type } == "refused")
        #expect(c.sent.withLock { $0.last?.reason } == "too many messages")
        #expect(tracker.peerIDs.isEmpty)
    }

    @Test func aNewerLoginReplacesTheOlderConnection() async throws {
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, logger: Logger(label: "test"))
        let (old, oldRun) = try await open(tracker, peer: "twice")
        let (new, _) = try await open(tracker, peer: "twice")
        old.feed.yield(SwarmMessage(type: "ping").json)
        #expect(await oldRun.value == "session ended")
        new.feed.yield(SwarmMessage(type: "ping").json)
        try await new.waitFor(2)
        #expect(new.sent.withLock { $0.last?.type } == "pong")
        #expect(tracker.peerIDs == ["twice"])
        new.feed.finish()
    }

    /// A session's announced objects are bounded (`maxObjectsPerSession`): past the bound a
    /// node's further objects are not kept, and not handed out to others.
    @Test func aSessionsAnnouncedObjectsAreBounded() async throws {
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, maxObjectsPerSession: 10, logger: Logger(label: "test"))
        let (holder, _) = try await open(tracker, peer: "holder")
        var have = SwarmMessage(type: "have")
        // Names that are not object ids do not count, and are not kept.
        have.objects = ["not-an-id", String(repeating: "x", count: 4096)] + (0..<15).map { Self.id("h\($0)") }
        holder.feed.yield(have.json)
        have.objects = [Self.id("h15")]
        holder.feed.yield(have.json)
        let (asker, _) = try await open(tracker, peer: "asker")
        var answers: [[String]] = []
        for (i, object) in ["h0", "h9", "h10", "h15"].enumerated() {
            var want = SwarmMessage(type: "want")
            want.object = Self.id(object)
            want.rid = i + 1
            asker.feed.yield(want.json)
            try await asker.waitFor(2 + i)
            answers.append(asker.sent.withLock { $0.last?.peers?.map(\.peerId) ?? [] })
        }
        #expect(answers == [["holder"], ["holder"], [], []])
        holder.feed.finish()
        asker.feed.finish()
    }

    /// All sessions' announced objects together are bounded too (`maxAnnouncedObjects`): one
    /// holder of the secret logging in under many peer ids cannot take the tracker's memory.
    /// Room is made by `lost` and by a session's end, and the count follows every change.
    @Test func theObjectsOfAllSessionsTogetherAreBounded() async throws {
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, maxAnnouncedObjects: 6, logger: Logger(label: "test"))
        let (a, _) = try await open(tracker, peer: "a")
        let (b, _) = try await open(tracker, peer: "b")
        let (asker, _) = try await open(tracker, peer: "asker")
        var asked = 1
        func holders(_ name: String) async throws -> [String] {
            var want = SwarmMessage(type: "want")
            want.object = Self.id(name)
            asked += 1
            want.rid = asked
            asker.feed.yield(want.json)
            try await asker.waitFor(asked)
            return asker.sent.withLock { $0.last?.peers?.map(\.peerId) ?? [] }
        }
        func announce(_ c: Connection, _ type: String, _ names: [String]) {
            var m = SwarmMessage(type: type)
            m.objects = names.map(Self.id)
            c.feed.yield(m.json)
        }
        announce(a, "have", ["a0", "a1", "a2", "a3", "a0"])  // the repeat counts once
        announce(b, "have", ["b0", "b1", "b2", "b3"])
        // The tracker takes one connection's messages in order, not two connections': the
        // wants wait for b's `have` through b's own ping.
        b.feed.yield(SwarmMessage(type: "ping").json)
        try await b.waitFor(2)
        #expect(try await holders("a3") == ["a"])
        #expect(try await holders("b1") == ["b"])
        #expect(try await holders("b2") == [], "past the bound: not kept")
        #expect(tracker.load.announcedObjects == 6)
        announce(a, "lost", ["a0", "not-held"])
        a.feed.yield(SwarmMessage(type: "ping").json)
        try await a.waitFor(2)
        #expect(tracker.load.announcedObjects == 5)
        announce(b, "have", ["b2", "b3"])
        b.feed.yield(SwarmMessage(type: "ping").json)
        try await b.waitFor(3)
        #expect(try await holders("b2") == ["b"])
        #expect(try await holders("b3") == [], "room for one")
        // A session's end gives its objects' room back.
        a.feed.finish()
        let deadline = ContinuousClock.now + .seconds(10)
        while tracker.peerIDs.contains("a") && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(tracker.load == (sessions: 2, announcedObjects: 3))
        announce(b, "have", ["b3"])
        b.feed.yield(SwarmMessage(type: "ping").json)
        try await b.waitFor(4)
        #expect(try await holders("b3") == ["b"])
        #expect(tracker.load.announcedObjects == 4)
        b.feed.finish()
        asker.feed.finish()
    }

    /// A connection's bytes are budgeted as well as its messages: past a burst, each message
    /// waits until the budget has refilled for it, so megabyte messages come at the rate.
    @Test func aConnectionsBytesPastTheBurstWaitForTheRate() {
        let start = ContinuousClock.now
        var bytes = TokenBucket(rate: 1000, burst: 8000)
        bytes.last = start
        #expect(bytes.spend(5000, at: start) == .zero)
        #expect(bytes.spend(3000, at: start) == .zero, "the burst")
        #expect(bytes.spend(500, at: start) == .milliseconds(500), "in debt: half a second at 1,000 a second")
        #expect(bytes.spend(500, at: start + .milliseconds(500)) == .milliseconds(500), "the debt paid, this one waits its own")
        #expect(bytes.spend(100, at: start + .seconds(20)) == .zero, "refilled, to the burst at most")
        #expect(bytes.spend(8000, at: start + .seconds(20)) == .milliseconds(100))
    }

    /// The same peer id from another URL is refused while the session it would replace is
    /// live: a node's id cannot be taken over and pointed at a liar (whose audits would ban
    /// the node). A silent session is replaced.
    @Test func aLoginFromAnotherURLCannotTakeOverALiveSession() async throws {
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, logger: Logger(label: "test"))
        let (first, _) = try await open(tracker, peer: "owned")
        let impostor = Connection()
        _ = Task { await tracker.serve(impostor.inbound) { text in impostor.sent.withLock { $0.append(SwarmMessage(json: text)!) } } }
        impostor.feed.yield(SwarmMessage.login(LoginProof.sign(appID: "app", peerID: "owned", secret: Self.secret), url: "http://liar").json)
        try await impostor.waitFor(1)
        let answer = impostor.sent.withLock { $0.first }
        #expect(answer?.type == "refused" && answer?.reason == LoginRefusal.peerInUse.rawValue, "\(String(describing: answer))")
        impostor.feed.finish()
        first.feed.yield(SwarmMessage(type: "ping").json)
        try await first.waitFor(2)
        #expect(first.sent.withLock { $0.last?.type } == "pong", "the node keeps its session")
        // Once its session is silent (three heartbeats), another URL may log in under the id.
        tracker.expireSilent(now: .now + tracker.heartbeat * 3 + .seconds(1))
        let later = Connection()
        _ = Task { await tracker.serve(later.inbound) { text in later.sent.withLock { $0.append(SwarmMessage(json: text)!) } } }
        later.feed.yield(SwarmMessage.login(LoginProof.sign(appID: "app", peerID: "owned", secret: Self.secret), url: "http://moved").json)
        try await later.waitFor(1)
        #expect(later.sent.withLock { $0.first?.type } == "welcome")
        first.feed.finish()
        later.feed.finish()
    }

    /// A tracker host whose `prepare` stalls until `release()`: the registry's writes on a
    /// disk that is slow for a moment, which a real disk cannot be made to show on demand.
    final class StalledHost: TrackerHost {
        let seedPeerID = "seed"
        let seedURL = "http://127.0.0.1:9"
        let gate = DispatchSemaphore(value: 0)
        let prepared = Mutex<[ObjectRef]>([])

        func holds(_ objectID: String) -> Bool { false }
        func checksums(_ ref: ObjectRef, urgent: Bool, waitForOrigin: Bool, readyWithin: Duration) async -> ChecksumAnswer {
            ChecksumAnswer(state: .preparing)
        }
        let reachedIDs = Mutex<[String]>([])
        func reached(_ objectIDs: [String], remember: Bool) -> [ObjectRef] {
            reachedIDs.withLock { $0 += objectIDs }
            return []
        }
        func prepare(_ refs: [ObjectRef], whole: Bool, retry: Bool) -> [ObjectRef] {
            _ = gate.wait(timeout: .now() + 30)
            prepared.withLock { $0 += refs }
            return refs
        }
        func readyAnswer(_ ref: ObjectRef) -> ChecksumAnswer? { nil }
        func recheck(_ ref: ObjectRef, piece: Int) async {}
        func audit(_ objectID: String, piece: Int, holderURL: String, requester: String, token: String) async -> AuditVerdict {
            .inconclusive("not asked")
        }
        func auditable(_ objectID: String, piece: Int) -> Bool { false }
        func release() { gate.signal() }
    }

    /// A host whose checksums wait until `open` (a registry waiting on a slow origin).
    final class GatedHost: TrackerHost {
        let seedPeerID = "seed"
        let seedURL = "http://127.0.0.1:9"
        let open = Mutex(false)
        let asked = Atomic<Int>(0)

        func holds(_ objectID: String) -> Bool { false }
        func checksums(_ ref: ObjectRef, urgent: Bool, waitForOrigin: Bool, readyWithin: Duration) async -> ChecksumAnswer {
            asked.add(1, ordering: .sequentiallyConsistent)
            let deadline = ContinuousClock.now + .seconds(30)
            while !open.withLock({ $0 }), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
            return ChecksumAnswer(state: .failed, reason: "the origin answered 404")
        }
        func reached(_ objectIDs: [String], remember: Bool) -> [ObjectRef] { [] }
        func prepare(_ refs: [ObjectRef], whole: Bool, retry: Bool) -> [ObjectRef] { refs }
        func readyAnswer(_ ref: ObjectRef) -> ChecksumAnswer? { nil }
        func recheck(_ ref: ObjectRef, piece: Int) async {}
        func audit(_ objectID: String, piece: Int, holderURL: String, requester: String, token: String) async -> AuditVerdict {
            .inconclusive("not asked")
        }
        func auditable(_ objectID: String, piece: Int) -> Bool { false }
    }

    /// A connection's `sums` waiting for their answers are bounded: past the bound one is
    /// answered `unavailable` at once (its node sends the player to the origin), and never
    /// reaches the registry. Each was a task and a queued job without bound.
    @Test func aConnectionsChecksumRequestsPastTheBoundAreAnsweredAtOnce() async throws {
        let host = GatedHost()
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, maxWaitingSums: 4, host: host, logger: Logger(label: "test"))
        let (c, _) = try await open(tracker, peer: "asker")
        func sums(_ rid: Int) -> String {
            var m = SwarmMessage(type: "sums")
            m.ref = Self.ref("s\(rid)")
            m.rid = rid
            return m.json
        }
        func answer(_ rid: Int) -> ChecksumAnswer? { c.sent.withLock { $0.first { $0.rid == rid }?.answer } }
        for rid in 1...6 { c.feed.yield(sums(rid)) }
        try await c.waitFor(3)  // the welcome, and the two past the bound at once
        #expect(answer(5)?.state == .unavailable && answer(5)?.reason == "too many checksum requests waiting")
        #expect(answer(6)?.state == .unavailable)
        #expect((1...4).allSatisfy { answer($0) == nil }, "the four within the bound wait for the registry")
        host.open.withLock { $0 = true }
        try await c.waitFor(7)
        #expect((1...4).allSatisfy { answer($0)?.state == .failed }, "answered by the registry")
        c.feed.yield(sums(7))
        try await c.waitFor(8)
        #expect(answer(7)?.state == .failed, "answered ones make room again")
        #expect(host.asked.load(ordering: .sequentiallyConsistent) == 5)
        c.feed.finish()
    }

    /// Queuing a playlist's objects for preparation does not hold the node's next messages:
    /// while the host is still queuing, a ping is answered.
    @Test func aStalledPrepareDoesNotHoldTheConnectionsNextMessages() async throws {
        let host = StalledHost()
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, host: host, logger: Logger(label: "test"))
        let (c, _) = try await open(tracker, peer: "reader")
        var prepare = SwarmMessage(type: "prepare")
        prepare.refs = (0..<3).map { ObjectRef(key: ObjectKey(xresid: "s", host: "cdn.example.com", path: "/seg\($0).ts"), url: "http://cdn.example.com/seg\($0).ts") }
        c.feed.yield(prepare.json)
        c.feed.yield(SwarmMessage(type: "ping").json)
        try await c.waitFor(2)
        #expect(c.sent.withLock { $0.last?.type } == "pong")
        #expect(host.prepared.withLock { $0.isEmpty }, "the ping was answered while the prepare was stalled")
        host.release()
        let deadline = ContinuousClock.now + .seconds(10)
        while host.prepared.withLock({ $0.isEmpty }) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(host.prepared.withLock { $0.map(\.path) } == ["/seg0.ts", "/seg1.ts", "/seg2.ts"])
        c.feed.finish()
    }

    /// What nodes announce and want tells the registry how far the swarm's players are, which
    /// moves its read-ahead (`ReadAheadWindow`).
    @Test func announcedAndWantedObjectsAreReachedAtTheHost() async throws {
        let host = StalledHost()
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, host: host, logger: Logger(label: "test"))
        let (c, _) = try await open(tracker, peer: "player")
        var have = SwarmMessage(type: "have")
        have.objects = [Self.id("o1"), "not-an-id", Self.id("o2")]
        // What a node announces at its login is all it holds, mostly long played: not reached.
        var all = SwarmMessage(type: "have")
        all.objects = [Self.id("old1"), Self.id("old2")]
        all.whole = true
        var want = SwarmMessage(type: "want")
        want.object = Self.id("o3")
        want.rid = 1
        c.feed.yield(all.json)
        c.feed.yield(have.json)
        c.feed.yield(want.json)
        try await c.waitFor(2)
        #expect(c.sent.withLock { $0.last?.type } == "peers")
        #expect(host.reachedIDs.withLock { $0 } == ["o1", "o2", "o3"].map(Self.id))
        c.feed.finish()
    }

    /// A host that prepares only some of what it is asked to, and whose objects are ready
    /// once the test says so.
    final class PartialHost: TrackerHost {
        let seedPeerID = "seed"
        let seedURL = "http://127.0.0.1:9"
        let ready = Mutex<Set<String>>([])
        let released: [ObjectRef]
        let prepareCalls = Atomic<Int>(0)

        init(releasing released: [ObjectRef]) { self.released = released }

        func holds(_ objectID: String) -> Bool { false }
        func checksums(_ ref: ObjectRef, urgent: Bool, waitForOrigin: Bool, readyWithin: Duration) async -> ChecksumAnswer {
            ChecksumAnswer(state: .preparing)
        }
        func prepare(_ refs: [ObjectRef], whole: Bool, retry: Bool) -> [ObjectRef] {
            prepareCalls.add(1, ordering: .sequentiallyConsistent)
            return Array(refs.prefix(1))
        }
        func reached(_ objectIDs: [String], remember: Bool) -> [ObjectRef] { released }
        func readyAnswer(_ ref: ObjectRef) -> ChecksumAnswer? {
            guard ready.withLock({ $0.contains(ref.key.id) }) else { return nil }
            let checksums = PieceChecksums(layout: PieceLayout(length: 10, pieceSize: 1024), digests: [SHA256.hash(Array(repeating: 1, count: 10))])!
            return ChecksumAnswer(ready: RegistryEntry(key: ref.key, state: .ready), checksums: checksums)
        }
        func recheck(_ ref: ObjectRef, piece: Int) async {}
        func audit(_ objectID: String, piece: Int, holderURL: String, requester: String, token: String) async -> AuditVerdict {
            .inconclusive("not asked")
        }
        func auditable(_ objectID: String, piece: Int) -> Bool { false }
    }

    static func ref(_ name: String) -> ObjectRef {
        ObjectRef(key: ObjectKey(xresid: "s", host: "cdn.example.com", path: "/\(name).ts"), url: "http://cdn.example.com/\(name).ts")
    }

    /// The objects pushed to a node unasked (`sums` without a request id), in order.
    static func pushed(_ c: Connection) -> [String] {
        c.sent.withLock { $0.filter { $0.type == "sums" && $0.rid == nil }.flatMap { $0.items ?? [] }.compactMap(\.object) }
    }

    /// The checksums of a playlist's objects reach the node unasked when their preparation
    /// ends: those the registry prepares for the playlist, and those read-ahead started as the
    /// node's players went on. One it does not prepare is not watched (it would stay so).
    @Test func preparationsEndingReachTheNodesThatWaitForThemAndOnlyThose() async throws {
        let (a, b, c3) = (Self.ref("a"), Self.ref("b"), Self.ref("c"))
        let host = PartialHost(releasing: [c3])
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, host: host, logger: Logger(label: "test"))
        let (c, _) = try await open(tracker, peer: "watcher")
        var prepare = SwarmMessage(type: "prepare")
        prepare.refs = [a, b]
        c.feed.yield(prepare.json)
        var want = SwarmMessage(type: "want")
        want.object = Self.id("x")
        want.rid = 1
        c.feed.yield(want.json)
        try await c.waitFor(2)
        let deadline = ContinuousClock.now + .seconds(10)
        while host.prepareCalls.load(ordering: .sequentiallyConsistent) == 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        try await Task.sleep(for: .milliseconds(50))
        host.ready.withLock { $0 = [a.key.id, b.key.id, c3.key.id] }
        for r in [a, b, c3] { tracker.preparationEnded(r) }
        let until = ContinuousClock.now + .seconds(10)
        while Self.pushed(c).count < 2 && ContinuousClock.now < until { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(Self.pushed(c).sorted() == [a.key.id, c3.key.id].sorted())
        c.feed.finish()
    }

    /// A node that sends prepares faster than they are queued has the excess dropped: one
    /// runs, 64 wait.
    @Test func aConnectionsPreparesBeyondTheQueueAreDropped() async throws {
        let host = StalledHost()
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, host: host, logger: Logger(label: "test"))
        let (c, _) = try await open(tracker, peer: "flood")
        for i in 0..<70 {
            var prepare = SwarmMessage(type: "prepare")
            prepare.refs = [Self.ref("f\(i)")]
            c.feed.yield(prepare.json)
        }
        c.feed.yield(SwarmMessage(type: "ping").json)
        try await c.waitFor(2)
        for _ in 0..<70 { host.release() }
        let deadline = ContinuousClock.now + .seconds(10)
        while host.prepared.withLock({ $0.count }) < 65 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(host.prepared.withLock { $0.count } == 65)
        c.feed.finish()
    }

    /// Nor past `maxQueuedPrepareObjects` objects, however few the messages (each may hold
    /// 4 MiB of them): a connection's backlog stays bounded in memory. An operator's prepare
    /// (one with a request id) that is dropped hears so at once; one taken hears so once its
    /// objects are queued.
    @Test func aConnectionsPreparesBeyondItsObjectBoundAreDropped() async throws {
        let host = StalledHost()
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, host: host, logger: Logger(label: "test"))
        let (c, _) = try await open(tracker, peer: "bulk")
        let perMessage = 5_000
        let fitting = SwarmTracker.maxQueuedPrepareObjects / perMessage
        let messages = fitting + 10
        for i in 0..<messages {
            var prepare = SwarmMessage(type: "prepare")
            prepare.refs = (0..<perMessage).map { Self.ref("b\(i)-\($0)") }
            prepare.rid = i + 1
            c.feed.yield(prepare.json)
        }
        c.feed.yield(SwarmMessage(type: "ping").json)
        // Welcome, pong and one busy answer per message past the bound, before any is queued.
        try await c.waitFor(2 + 10)
        let busy = c.sent.withLock { $0.filter { $0.type == "prepared" } }
        #expect(busy.compactMap(\.rid).sorted() == Array((fitting + 1)...messages))
        #expect(busy.allSatisfy { $0.reason == "too many objects queued" })
        for _ in 0..<messages { host.release() }
        let taken = SwarmTracker.maxQueuedPrepareObjects
        let deadline = ContinuousClock.now + .seconds(20)
        while host.prepared.withLock({ $0.count }) < taken && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try await c.waitFor(2 + messages)
        try await Task.sleep(for: .milliseconds(100))
        #expect(host.prepared.withLock { $0.count } == taken)
        let queued = c.sent.withLock { $0.filter { $0.type == "prepared" && $0.reason == nil } }
        #expect(queued.compactMap(\.rid).sorted() == Array(1...fitting))
        c.feed.finish()
    }

    /// A tracker host whose audits wait until the test gives their verdict: an audit that
    /// takes a while, with the holder announcing and losing objects meanwhile (a real holder
    /// cannot be held mid-answer on demand).
    final class AuditHost: TrackerHost {
        let seedPeerID = "seed"
        let seedURL = "http://127.0.0.1:9"
        let verdicts: AsyncStream<AuditVerdict>
        let verdict: AsyncStream<AuditVerdict>.Continuation
        let asked = Atomic<Int>(0)

        init() { (verdicts, verdict) = AsyncStream.makeStream(of: AuditVerdict.self) }

        func holds(_ objectID: String) -> Bool { false }
        func checksums(_ ref: ObjectRef, urgent: Bool, waitForOrigin: Bool, readyWithin: Duration) async -> ChecksumAnswer {
            ChecksumAnswer(state: .preparing)
        }
        func reached(_ objectIDs: [String], remember: Bool) -> [ObjectRef] { [] }
        func prepare(_ refs: [ObjectRef], whole: Bool, retry: Bool) -> [ObjectRef] { [] }
        func readyAnswer(_ ref: ObjectRef) -> ChecksumAnswer? { nil }
        func recheck(_ ref: ObjectRef, piece: Int) async {}
        func audit(_ objectID: String, piece: Int, holderURL: String, requester: String, token: String) async -> AuditVerdict {
            asked.add(1, ordering: .sequentiallyConsistent)
            var next = verdicts.makeAsyncIterator()
            return await next.next() ?? .inconclusive("test ended")
        }
        func auditable(_ objectID: String, piece: Int) -> Bool { piece == 0 }
    }

    /// A peer reported for an object is not handed out for it while its audit waits or runs,
    /// not even after it logs in again, and for `maxSuspension` at most. After an audit that
    /// finds the piece intact it is handed out again, unless it lost the object meanwhile;
    /// after one that finds it bad it is not.
    @Test func aReportedPeerIsHandedOutAgainOnlyIfItsAuditFindsNothingAndItStillHoldsTheObject() async throws {
        let host = AuditHost()
        let tracker = SwarmTracker(appID: "app", secret: Self.secret, host: host, logger: Logger(label: "test"))
        var (holder, _) = try await open(tracker, peer: "holder")
        let (reporter, _) = try await open(tracker, peer: "reporter")
        var rid = 0
        func holders(of object: String) async throws -> [String] {
            rid += 1
            var want = SwarmMessage(type: "want")
            want.object = Self.id(object)
            want.rid = rid
            let before = reporter.sent.withLock { $0.count }
            reporter.feed.yield(want.json)
            try await reporter.waitFor(before + 1)
            return reporter.sent.withLock { $0.last?.peers?.map(\.peerId) ?? [] }
        }
        // Returns once the audit of the report has begun (audits run one at a time: the
        // one before it has ended).
        func report(_ object: String) async throws {
            let asked = host.asked.load(ordering: .sequentiallyConsistent)
            var m = SwarmMessage(type: "report")
            m.peerId = "holder"
            m.object = Self.id(object)
            m.piece = 0
            reporter.feed.yield(m.json)
            let deadline = ContinuousClock.now + .seconds(10)
            while host.asked.load(ordering: .sequentiallyConsistent) == asked {
                guard ContinuousClock.now < deadline else { throw CancellationError() }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        func announce(_ type: String, _ objects: [String], whole: Bool = false) async throws {
            var m = SwarmMessage(type: type)
            m.objects = objects.map(Self.id)
            if whole { m.whole = true }
            let before = holder.sent.withLock { $0.count }
            holder.feed.yield(m.json)
            holder.feed.yield(SwarmMessage(type: "ping").json)
            try await holder.waitFor(before + 1)
        }
        try await announce("have", ["kept", "lost", "bad"])
        #expect(try await holders(of: "kept") == ["holder"])

        try await report("kept")
        #expect(try await holders(of: "kept").isEmpty, "not handed out while audited")
        #expect(try await holders(of: "lost") == ["holder"], "only for the object reported")
        // It logs in again meanwhile and announces all it holds: still not handed out.
        holder.feed.finish()
        (holder, _) = try await open(tracker, peer: "holder")
        try await announce("have", ["kept", "lost", "bad"], whole: true)
        #expect(try await holders(of: "kept").isEmpty, "not handed out while audited, after a new login")
        host.verdict.yield(.intact)

        try await report("lost")
        #expect(try await holders(of: "kept") == ["holder"], "the audit found the piece intact")
        try await announce("lost", ["lost"])
        host.verdict.yield(.intact)
        try await report("bad")
        host.verdict.yield(.bad("checksum"))
        try await report("never")
        #expect(try await holders(of: "lost").isEmpty, "it lost the object during the audit")
        #expect(try await holders(of: "bad").isEmpty, "its piece was bad")
        #expect(try await holders(of: "kept") == ["holder"])

        // An audit that takes long (stuck behind others) keeps the holder out for at most
        // `maxSuspension`.
        try await announce("have", ["never"])
        #expect(try await holders(of: "never").isEmpty)
        try await Task.sleep(for: SwarmTracker.maxSuspension + .milliseconds(200))
        #expect(try await holders(of: "never") == ["holder"], "handed out again while its audit still waits")
        host.verdict.finish()
        holder.feed.finish()
        reporter.feed.finish()
    }
}
