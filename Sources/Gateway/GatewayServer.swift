import Hummingbird
import Logging

/// A gateway node's HTTP server: the responder behind Hummingbird, stopped gracefully on
/// SIGTERM or SIGINT (stop accepting, finish in-flight responses, exit).
public struct GatewayServer: Sendable {
    public let responder: GatewayResponder
    let logger: Logger

    public init(configuration: GatewayConfiguration, origin: any OriginFetching, logger: Logger) {
        self.responder = GatewayResponder(configuration: configuration, origin: origin, logger: logger)
        self.logger = logger
    }

    /// Runs until a signal; `onListening` gets the bound port (useful with port 0).
    public func run(onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let c = responder.configuration
        let app = Application(
            responder: responder,
            configuration: .init(address: .hostname(c.host, port: c.port), serverName: "swarmgate/\(GatewayResponder.version)"),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? c.port) },
            logger: logger)
        try await app.runService(gracefulShutdownSignals: [.sigterm, .sigint])
    }
}
