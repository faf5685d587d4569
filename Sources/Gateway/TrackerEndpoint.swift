import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import ServiceLifecycle
import Swarm

/// `/swarm/v1/ws`: WebSocket upgrades handed to the tracker's signalling; every other request
/// goes to the HTTP responder.
enum TrackerEndpoint {
    static let path = "/swarm/v1/ws"

    static func server(_ tracker: SwarmTracker?) -> HTTPServerBuilder {
        guard let tracker else { return .http1() }
        return .http1WebSocketUpgrade { request, _, _ in
            guard request.path == path else { return .dontUpgrade }
            return .upgrade([:]) { inbound, outbound, _ in
                let texts = inbound.messages(maxSize: 1 << 20).compactMap { message -> String? in
                    if case .text(let text) = message { return text }
                    return nil
                }
                // On graceful shutdown the connection is closed ("going away"): nodes reconnect
                // elsewhere or later, and the server does not wait on them.
                let reason = await withGracefulShutdownHandler {
                    await tracker.serve(texts) { text in try await outbound.write(.text(text)) }
                } onGracefulShutdown: {
                    Task { try? await outbound.close(.goingAway, reason: "tracker shutting down") }
                }
                try? await outbound.close(reason == "closed" ? .normalClosure : .policyViolation, reason: reason)
            }
        }
    }
}

/// The app id and secret that nodes and tracker share (SPEC section 3).
public struct SwarmCredentials: Sendable {
    public var appID: String
    public var secret: String

    /// From `--app-id` and `--app-secret-file` (or `SWARMGATE_APP_SECRET`). Without a secret,
    /// nil when `required`, else a random one: an embedded tracker that no other node can join.
    public static func from(_ s: Settings, environment: [String: String], required: Bool) throws(SettingsError) -> SwarmCredentials? {
        let appID = s["app-id"] ?? "swarmgate"
        var secret = environment["SWARMGATE_APP_SECRET"]
        if let file = s["app-secret-file"] {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw SettingsError("app-secret-file: cannot read \(file)")
            }
            secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        if let secret, !secret.isEmpty { return SwarmCredentials(appID: appID, secret: secret) }
        guard !required else { return nil }
        return SwarmCredentials(appID: appID, secret: UUID().uuidString + UUID().uuidString)
    }
}

/// `swarmgate tracker`: the signalling endpoint and `/health`, `/ready`, `/metrics`, `/peers`,
/// in one ServiceGroup that SIGTERM stops gracefully.
public struct TrackerServer: Sendable {
    public let host: String
    public let port: Int
    public let credentials: SwarmCredentials
    let logger: Logger

    public init(host: String, port: Int, credentials: SwarmCredentials, logger: Logger) {
        self.host = host
        self.port = port
        self.credentials = credentials
        self.logger = logger
    }

    public func run(onListening: @escaping @Sendable (Int) async -> Void) async throws {
        let tracker = SwarmTracker(appID: credentials.appID, secret: credentials.secret, logger: logger)
        let app = Application(
            responder: TrackerResponder(tracker: tracker),
            server: TrackerEndpoint.server(tracker),
            configuration: .init(address: .hostname(host, port: port), serverName: "swarmgate-tracker/\(GatewayResponder.version)"),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? port) },
            logger: logger)
        let group = ServiceGroup(configuration: .init(
            services: [app, SilentSessionSweeper(tracker: tracker)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
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

/// The tracker's HTTP answers besides the WebSocket.
struct TrackerResponder: HTTPResponder {
    typealias Context = BasicRequestContext
    let tracker: SwarmTracker
    let started = ContinuousClock.now

    func respond(to request: Request, context: Context) async throws -> Response {
        switch request.uri.path {
        case "/health":
            return JSONBody.response([
                ("status", .string("ok")), ("version", .string(GatewayResponder.version)),
                ("uptime_s", .int(Int((ContinuousClock.now - started).components.seconds))),
            ])
        case "/ready":
            return JSONBody.response([("status", .string("ready"))])
        case "/peers":
            return JSONBody.response([("peers", .array(tracker.peerIDs.map { .string($0) }))])
        case "/metrics":
            let text = "# TYPE swarmgate_tracker_peers gauge\nswarmgate_tracker_peers \(tracker.peerIDs.count)\n"
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: ByteBuffer(string: text)))
        default:
            return GatewayFailure(.notFound, "no such endpoint").response
        }
    }
}
