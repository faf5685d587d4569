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
                let texts = inbound.messages(maxSize: SwarmMessage.maxTrackerMessageSize).compactMap { message -> String? in
                    if case .text(let text) = message { return text }
                    return nil
                }
                // On graceful shutdown the connection is closed ("going away"): nodes reconnect
                // elsewhere or later, and the server does not wait on them.
                let sender = SerialSender { text in try await outbound.writeTextMessage(text) }
                let reason = await withGracefulShutdownHandler {
                    await tracker.serve(texts, send: sender.send)
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
