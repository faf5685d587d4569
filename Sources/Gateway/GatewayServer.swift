import Foundation
import Hummingbird
import Logging
import Manifest
import NIOCore
import ServiceLifecycle
import Swarm

/// A gateway node's HTTP server: the responder behind Hummingbird, and with `--demo` a local
/// origin serving the samples, all in one ServiceGroup that SIGTERM or SIGINT stops gracefully
/// (stop accepting, finish in-flight responses, exit), and a second one at once (`StopSignals`).
public struct GatewayServer: Sendable {
    public let configuration: GatewayConfiguration
    /// The app id and secret of the swarm: the embedded tracker's, or for logging in to
    /// `configuration.tracker`.
    public let credentials: SwarmCredentials
    let logger: Logger

    public init(configuration: GatewayConfiguration, credentials: SwarmCredentials, logger: Logger) {
        self.configuration = configuration
        self.credentials = credentials
        self.logger = logger
    }

    /// Runs until a signal. `makeOrigin` gets the configuration with the origin hosts to allow,
    /// the demo origin included; `onListening` gets the bound port and, in demo mode, the demo
    /// origin's `host:port`.
    public func run(
        demoRoot: URL? = nil,
        makeOrigin: @Sendable (GatewayConfiguration) throws -> OriginClientAdapter,
        onListening: @escaping @Sendable (_ port: Int, _ demoOrigin: String?) async -> Void = { _, _ in }
    ) async throws {
        // Before anything is opened: a stop during the set-up waits for the services to run.
        let stopSignals = await StopSignals.trap()
        Self.raiseOpenFileLimit()
        var services: [any Service] = []
        var demoAuthority: String?
        if let demoRoot {
            let port = try Self.freeLoopbackPort()
            demoAuthority = "127.0.0.1:\(port)"
            services.append(Application(
                responder: DemoOrigin(root: demoRoot),
                configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "swarmgate-demo-origin"),
                logger: { var l = Logger(label: "swarmgate.demo-origin"); l.logLevel = configuration.logLevel; return l }()))
        }
        var c = configuration
        if let demoAuthority { c.allowOrigins.append(demoAuthority) }
        let origin = try makeOrigin(c)
        let stats = TrafficStats()
        let node = try SwarmNode(
            cacheDirectory: c.cacheDirectory, cacheSize: c.cacheSize, registryPath: c.registryPath, pieceSize: c.pieceSize,
            maxPrepareJobs: c.prepareJobs, registryEntries: c.registryEntries, maxObjectSize: c.maxObjectSize, origin: origin.client, peerDeadline: c.peerDeadline ?? GatewayResponder.unknownDurationDeadline,
            readAhead: c.readAhead, revalidateAfter: c.revalidateAfter, logger: logger, onBadPiece: { stats.countPieceFailure() },
            onFallback: { reason in TrafficStats.FallbackReason(rawValue: reason.rawValue).map(stats.countFallback) },
            onPrepareBytes: { key, count in stats.addPrepared(count, xresid: key.xresid) })
        services.append(node.prepareQueue)
        let peerID = try PeerID(cacheDirectory: c.cacheDirectory)
        let responder = GatewayResponder(
            configuration: c, origin: origin, node: node, identity: SwarmIdentity(peer: peerID, secret: credentials.secret),
            stats: stats, logger: logger)
        // Without --tracker the node is its own tracker; with it, it logs in there.
        var embedded: SwarmTracker?
        if let trackerURL = c.tracker, c.role == .node {
            let peerURL = c.peerURL
            let link = TrackerLink(
                configuration: .init(
                    url: trackerURL, appID: credentials.appID, secret: credentials.secret,
                    peerID: peerID, publicURL: { peerURL ?? responder.currentPublicURL }),
                held: { node.store.heldObjects() }, logger: logger)
            node.attach(link)
            services.append(link)
        } else {
            let host = LocalRegistryHost(node: node, seedPeerID: peerID.current, wait: c.originIdleTimeout, publicURL: { responder.currentPublicURL })
            let tracker = SwarmTracker(
                appID: credentials.appID, secret: credentials.secret, messagesPerSecond: c.nodeMessageRate, host: host,
                nonceLog: node.trackerRecords, offenceLog: node.trackerRecords, logger: logger)
            // Weak: the tracker holds the node (its host), which holds these.
            node.prepareQueue.onFinished { [weak tracker] ref in tracker?.preparationEnded(ref) }
            node.onCopyDropped { [weak tracker] key, checksums in tracker?.copyDropped(key.id, copy: checksums.fingerprint) }
            responder.attach(tracker)
            services.append(SilentSessionSweeper(tracker: tracker))
            embedded = tracker
        }
        let port = c.port
        let demo = demoAuthority
        services.append(Application(
            responder: responder,
            server: TrackerEndpoint.server(embedded),
            configuration: .init(
                address: .hostname(c.host, port: c.port),
                serverName: (c.role == .tracker ? "swarmgate-tracker/" : "swarmgate/") + GatewayResponder.version),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? port
                responder.serverBound(port: bound)
                await onListening(bound, demo)
            },
            logger: logger))
        // Last, so that a stop reaches it first: the server quiesces once it has returned.
        services.append(ResponseDrain(responses: responder.inFlight, limit: .seconds(20), logger: logger))
        let group = ServiceGroup(configuration: .init(services: services, logger: logger))
        defer {
            // The piece index is written behind the pieces; a stop writes what is left.
            do { try node.store.flush() } catch { logger.error("piece index not written at stop", metadata: ["error": "\(error)"]) }
        }
        do {
            try await stopSignals.run(group, logger: logger)
        } catch let error as IOError where error.errnoCode == EADDRINUSE || error.errnoCode == EADDRNOTAVAIL || error.errnoCode == EACCES {
            throw ListenFailure(host: c.host, port: c.port, errno: error.errnoCode)
        }
    }

    /// A port on 127.0.0.1 that nothing listens on right now.
    static func freeLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw GatewayFailure(.internalServerError, "socket: \(errno)") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa -> Bool in
                bind(fd, sa, len) == 0 && getsockname(fd, sa, &len) == 0
            }
        }
        guard bound else { throw GatewayFailure(.internalServerError, "bind: \(errno)") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}

/// The registry and seed behind a tracker: the node it runs in. Checksums are computed here
/// from the origin copy, for objects whose URL names the object asked about.
struct LocalRegistryHost: TrackerHost {
    let node: SwarmNode
    let seedPeerID: String
    /// How long a player's request waits for the origin's first answer.
    let wait: Duration
    let publicURL: @Sendable () -> String

    var seedURL: String { publicURL() }

    func holds(_ objectID: String) -> Bool { node.store.info(id: objectID) != nil }

    func checksums(_ ref: ObjectRef, urgent: Bool, waitForOrigin: Bool, readyWithin: Duration) async -> ChecksumAnswer {
        guard Self.names(ref) else { return ChecksumAnswer(state: .failed, reason: "the URL does not name the object asked about") }
        return await node.checksums(ref, urgent: urgent, wait: waitForOrigin ? wait : .zero, readyWithin: readyWithin)
    }

    func prepare(_ refs: [ObjectRef], whole: Bool, retry: Bool) -> [ObjectRef] { node.prepareAhead(refs.filter(Self.names), whole: whole, retry: retry) }

    func reached(_ objectIDs: [String], remember: Bool) -> [ObjectRef] { node.reached(objectIDs, remember: remember) }

    func readyAnswer(_ ref: ObjectRef) -> ChecksumAnswer? {
        node.registry.readyAnswer(ref.key)
    }

    func recheck(_ ref: ObjectRef, piece: Int) async {
        guard Self.names(ref) else { return }
        await node.recheck(ref, piece: piece)
    }

    func auditable(_ objectID: String, piece: Int) -> Bool {
        guard let checksums = node.registry.ready(id: objectID)?.checksums else { return false }
        return piece >= 0 && piece < checksums.layout.count
    }

    func audit(_ objectID: String, piece: Int, holderURL: String, requester: String, token: String) async -> AuditVerdict {
        await node.audit(objectID, piece: piece, holderURL: holderURL, requester: requester, token: token)
    }

    /// Whether `ref.url` is the origin URL of the object `ref` keys: a node cannot have the
    /// registry file one URL's checksums under another object.
    static func names(_ ref: ObjectRef) -> Bool {
        guard let url = try? OriginURL(ref.url) else { return false }
        return url.authority.lowercased() == ref.host && url.path == ref.path
    }
}

extension GatewayServer {
    /// Raises the soft limit on open files to the hard one: every player, peer and origin
    /// transfer is a descriptor, and the usual soft limit (1,024) is reached by a busy node
    /// (or by a client that opens idle connections) long before memory or the CPU.
    static func raiseOpenFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}

/// The listen address could not be taken: what a `bind` error says, with the address.
public struct ListenFailure: Error, CustomStringConvertible {
    public let host: String
    public let port: Int
    public let errno: Int32

    public var description: String {
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        switch errno {
        case EADDRINUSE: return "cannot listen on \(address): the address is in use (another swarmgate, or another server)"
        case EADDRNOTAVAIL: return "cannot listen on \(address): no interface of this machine has that address"
        case EACCES: return "cannot listen on \(address): permission denied (ports below 1024 need privileges)"
        default: return "cannot listen on \(address): \(String(cString: strerror(errno)))"
        }
    }
}
