import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle
import Swarm
import Synchronization

/// `/swarm/v1/ws`: WebSocket upgrades handed to the tracker's signalling; every other request
/// goes to the HTTP responder.
enum TrackerEndpoint {
    static let path = "/swarm/v1/ws"

    static func server(_ tracker: SwarmTracker?) -> HTTPServerBuilder {
        guard let tracker else {
            return HTTPServerBuilder { responder in
                AfterDecoder(inner: HTTP1Channel(responder: responder, configuration: .init(idleTimeout: idleTimeout))) { [HTTP1Rules(upgradable: false)] }
            }
        }
        let gate = LoginGate()
        // WebSocket pings every `pingPeriod`, as nodes send the tracker: a node that answers
        // none (its host hung, a network black hole) has its connection closed, and its session
        // ends, so that wants stop naming it. With the 30 s default, and sessions ending after
        // three silent heartbeats, a frozen node was handed out for 30 to 55 s, and every node
        // asking for an object it held paid a piece's deadline. A stop closes every node's
        // connection and waits `closeTimeout` at most for its answer: a frozen node answers
        // none, and with the 15 s default the tracker's stop waited for it that long.
        let configuration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(idleTimeout: idleTimeout), ws: .init(autoPing: .enabled(timePeriod: pingPeriod), closeTimeout: closeTimeout))
        // Until a connection's first request head, Hummingbird watches neither its idleness nor
        // malformed requests on an upgradable channel (`FirstRequestGuard`); an upgrade that
        // fails (a request after the upgrade request, or a body with it) ends the handling
        // and left the connection open, with nothing reading it: it is closed then.
        return HTTPServerBuilder { responder in
            AfterDecoder(
                inner: HTTP1WebSocketUpgradeChannel(responder: responder, configuration: configuration, shouldUpgrade: upgrade(tracker, gate)),
                closeWhenDone: true
            ) { [HTTP1Rules(upgradable: true), FirstRequestGuard(deadline: idleTimeout)] }
        }
    }

    /// Upgrades requests for `path` to the tracker's signalling.
    static func upgrade(
        _ tracker: SwarmTracker, _ gate: LoginGate
    ) -> @Sendable (HTTPRequest, any Channel, Logger) async throws -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        { request, channel, _ in
            guard request.path == path else { return .dontUpgrade }
            let source = LoginGate.source(of: channel.remoteAddress)
            return .upgrade([:]) { inbound, outbound, _ in
                // Before its login a connection is anyone's: a few at once from one address,
                // and some more in all, each for a heartbeat at most, each with a first message
                // of `maxLoginSize` at most.
                let eviction = Eviction()
                guard let ticket = gate.enter(from: source, evict: eviction.evict) else {
                    try? await outbound.close(.policyViolation, reason: Self.tooManyWaiting)
                    return
                }
                let messages = SignallingMessages(inbound: inbound, gate: gate, ticket: ticket)
                // On graceful shutdown the connection is closed ("going away"): nodes reconnect
                // elsewhere or later, and the server does not wait on them.
                let sender = SerialSender { text in try await outbound.writeTextMessage(text) }
                let serving = Task { await tracker.serve(messages, send: sender.send) }
                eviction.watch(serving)
                let deadline = Task {
                    try await Task.sleep(for: tracker.heartbeat)
                    if messages.awaitingLogin { serving.cancel() }
                }
                let reason = await withGracefulShutdownHandler {
                    await withTaskCancellationHandler { await serving.value } onCancel: { serving.cancel() }
                } onGracefulShutdown: {
                    Task { try? await outbound.close(.goingAway, reason: "tracker shutting down") }
                    // A node that answers no close (a frozen host) held its connection open,
                    // and the tracker's stop with it, for good: it is let go after a while.
                    Task {
                        try? await Task.sleep(for: closeTimeout)
                        serving.cancel()
                    }
                }
                deadline.cancel()
                messages.leave()
                let noLogin = reason == "no login" && messages.awaitingLogin
                let evicted = eviction.evicted.load(ordering: .acquiring)
                let why = evicted ? Self.tooManyWaiting : noLogin ? "no login within \(tracker.heartbeat)" : reason
                try? await outbound.close(reason == "closed" && !evicted ? .normalClosure : .policyViolation, reason: why)
            }
        }
    }

    /// How long an HTTP connection may sit between requests (or before its first, on a node
    /// that runs no tracker) before it is closed: a player's keep-alive outlasts a segment,
    /// a client that sends nothing or half a request does not hold a descriptor for ever.
    static let idleTimeout: TimeAmount = .seconds(60)

    /// How often the tracker pings each node's connection (`server`).
    static let pingPeriod: Duration = .seconds(4)
    /// How long a node may take to answer the close of its connection when the tracker stops
    /// (`upgrade`, and the WebSocket close handshake after it).
    static let closeTimeout: Duration = .seconds(2)

    /// Connections upgraded at once that have not sent their first message, at most: in all,
    /// and from one address (an IPv6 one by its /64). With the first bound alone, one client
    /// holding 64 silent upgrades, opened again every heartbeat, kept every node from logging
    /// in, with no secret. Past the bound in all, the connection that has waited longest is
    /// closed for the new one (`LoginGate`).
    static let maxAwaitingLogin = 512
    static let maxAwaitingLoginPerSource = 16
    static let tooManyWaiting = "too many connections waiting to log in; try again"

    /// A connection's way out of the login gate for a newer one: the serving task is
    /// cancelled (now, or as soon as it is made), and the connection closed as too many.
    final class Eviction: Sendable {
        let evicted = Atomic<Bool>(false)
        private let serving = Mutex<Task<String, Never>?>(nil)

        @Sendable func evict() {
            evicted.store(true, ordering: .releasing)
            serving.withLock { $0 }?.cancel()
        }

        func watch(_ task: Task<String, Never>) {
            serving.withLock { $0 = task }
            if evicted.load(ordering: .acquiring) { task.cancel() }
        }
    }
}

/// Counts the connections that have not sent their first message (their login), in all and
/// by source address. Past `TrackerEndpoint.maxAwaitingLogin` in all, the one that has waited
/// longest makes room for a new one: a node sends its login as soon as its upgrade is
/// answered, so a flood from many addresses (33 held every place before, with no secret)
/// must now open connections faster than a node's round trip to keep one out.
final class LoginGate: Sendable {
    private struct Awaiting {
        var next: UInt64 = 0
        var waiting: [UInt64: (source: String, evict: @Sendable () -> Void)] = [:]
        var bySource: [String: Int] = [:]

        mutating func remove(_ ticket: UInt64) -> (@Sendable () -> Void)? {
            guard let w = waiting.removeValue(forKey: ticket) else { return nil }
            let left = bySource[w.source, default: 1] - 1
            bySource[w.source] = left > 0 ? left : nil
            return w.evict
        }
    }
    private let awaiting = Mutex(Awaiting())

    /// Counts one more from `source` (its ticket), unless `maxAwaitingLoginPerSource` from it
    /// wait (nil). Past `maxAwaitingLogin` in all, the longest waiting is let go and its
    /// `evict` called.
    func enter(from source: String, evict: @escaping @Sendable () -> Void) -> UInt64? {
        let (ticket, evicted) = awaiting.withLock { a -> (UInt64?, (@Sendable () -> Void)?) in
            guard a.bySource[source, default: 0] < TrackerEndpoint.maxAwaitingLoginPerSource else { return (nil, nil) }
            var evicted: (@Sendable () -> Void)?
            if a.waiting.count >= TrackerEndpoint.maxAwaitingLogin, let oldest = a.waiting.keys.min() { evicted = a.remove(oldest) }
            a.next += 1
            a.waiting[a.next] = (source, evict)
            a.bySource[source, default: 0] += 1
            return (a.next, evicted)
        }
        evicted?()
        return ticket
    }

    /// `ticket` no longer waits (its login came, or its connection ended); nothing if it was
    /// let go already.
    func leave(_ ticket: UInt64) {
        _ = awaiting.withLock { $0.remove(ticket) }
    }

    /// How many wait, in all.
    var waiting: Int { awaiting.withLock { $0.waiting.count } }

    /// The address a connection's waits count against: an IPv4 address, an IPv6 one's /64 (a
    /// host has a whole /64 to pick from), or one key for whatever has no IP address.
    static func source(of address: SocketAddress?) -> String {
        switch address {
        case .v4?: return address?.ipAddress ?? "other"
        case .v6(let a)?:
            return withUnsafeBytes(of: a.address.sin6_addr) { bytes in
                // An IPv4 client of a dual-stack listener (`[::]`) comes as ::ffff:a.b.c.d: its
                // own IPv4 address, not the /64 that every such client shares.
                if bytes.prefix(10).allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
                    return bytes.suffix(4).map { String($0) }.joined(separator: ".")
                }
                return bytes.prefix(8).map { String($0, radix: 16) }.joined(separator: ".") + "/64"
            }
        default: return "other"
        }
    }
}

/// A signalling connection's text messages: the first (the login, from anyone) of
/// `SwarmMessage.maxLoginSize` at most, the others of `SwarmMessage.maxTrackerMessageSize`.
/// A first message that is not text is handed on empty, which no login is; a later one ends
/// the connection (`SignallingFault`): binary messages were skipped here, before the tracker's
/// rate limits saw them, and one node sent 465 MB a second of them at a core's cost.
struct SignallingMessages: AsyncSequence, Sendable {
    typealias Element = String
    let inbound: WebSocketInboundStream
    let gate: LoginGate
    let ticket: UInt64
    private let first = FirstMessage()

    init(inbound: WebSocketInboundStream, gate: LoginGate, ticket: UInt64) {
        self.inbound = inbound
        self.gate = gate
        self.ticket = ticket
    }

    /// Whether the first message has yet to come.
    var awaitingLogin: Bool { !first.came.load(ordering: .relaxed) }

    /// Leaves the gate, once: when the first message comes, or when the connection ends first.
    func leave() {
        if !first.left.exchange(true, ordering: .relaxed) { gate.leave(ticket) }
    }

    final class FirstMessage: Sendable {
        let came = Atomic<Bool>(false)
        let left = Atomic<Bool>(false)
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var frames: WebSocketInboundStream.AsyncIterator
        let messages: SignallingMessages

        mutating func next() async throws -> String? {
            let login = messages.awaitingLogin
            guard let message = try await frames.nextMessage(maxSize: login ? SwarmMessage.maxLoginSize : SwarmMessage.maxTrackerMessageSize)
            else { return nil }
            if login {
                messages.first.came.store(true, ordering: .relaxed)
                messages.leave()
            }
            if case .text(let text) = message { return text }
            if login { return "" }
            throw SwarmTracker.SignallingFault("binary messages are not part of the protocol")
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(frames: inbound.makeAsyncIterator(), messages: self) }
}

/// The app id and secret that nodes and tracker share (SPEC section 3).
public struct SwarmCredentials: Sendable {
    public var appID: String
    public var secret: String

    /// From `--app-id` and `--app-secret-file` (or `SWARMGATE_APP_SECRET`). Without a secret,
    /// nil when `required`, else a random one: an embedded tracker that no other node can join.
    /// A secret file that holds nothing is an error: taken as "no secret", it gave a tracker a
    /// random secret that no node could log in with, and said nothing.
    public static func from(_ s: Settings, environment: [String: String], required: Bool) throws(SettingsError) -> SwarmCredentials? {
        let appID = s["app-id"] ?? "swarmgate"
        var secret = environment["SWARMGATE_APP_SECRET"]
        if let file = s.secretFile("app-secret-file", unless: "SWARMGATE_APP_SECRET", in: environment) {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw SettingsError("app-secret-file: cannot read \(file)")
            }
            secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard secret?.isEmpty == false else { throw SettingsError("app-secret-file: \(file) is empty (it must hold the app secret)") }
        }
        if let secret, !secret.isEmpty { return SwarmCredentials(appID: appID, secret: secret) }
        guard !required else { return nil }
        return SwarmCredentials(appID: appID, secret: UUID().uuidString + UUID().uuidString)
    }
}

/// Ends tracker sessions that stopped pinging.
struct SilentSessionSweeper: Service {
    let tracker: SwarmTracker
    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: tracker.heartbeat)
                tracker.expireSilent()
            }
        }
    }
}
