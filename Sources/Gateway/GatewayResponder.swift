import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Manifest
import NIOCore
import PieceStore
import Swarm
import Synchronization

/// The gateway's HTTP answers (SPEC sections 1 and 2): the node endpoints, then every other
/// request target decoded as a proxy URL. Manifests are fetched and rewritten on every request;
/// media objects are served from the piece cache (or 302 while their checksums are not ready);
/// keys stream from the origin and are never stored.
public final class GatewayResponder: HTTPResponder {
    public typealias Context = GatewayRequestContext

    public let configuration: GatewayConfiguration
    let origin: any OriginFetching
    /// The piece store, the checksum registry and the prepare jobs.
    public let node: SwarmNode
    /// This node's peer id and the app secret, for piece tokens.
    let identity: SwarmIdentity
    /// Verified pieces in memory (`--memory-cache-size`).
    let hotPieces: HotPieces
    public let stats: TrafficStats
    public let uploads: UploadSwitch
    /// Who may call `/prepare` and `/jobs`.
    let admin: AdminAccess
    let queuedPlaylists = RecentlyQueued(interval: .seconds(60))
    /// Parts of long VOD lists sent to the tracker as players reached them (`PlayOrder.readAheadPart`).
    let queuedParts = RecentlyQueued(interval: .seconds(60))
    /// VOD lists being planned for read-ahead, one at a time (`SerialWork`): a list refused
    /// there is not claimed, and is planned when it is read again.
    let readAheadPlans = SerialWork(label: "swarmgate.read-ahead-plans", maxQueued: 8)
    /// Live playlists and MPDs whose newest segments were looked at lately (`liveListingDue`:
    /// by time, and by content), and the live objects queued for preparation (each once).
    let liveRefreshes = RecentlyQueued(interval: .seconds(1))
    let liveVersions = RecentlyQueued(interval: .seconds(600))
    /// Holds of live lists' answers under way (`holdForLiveTail`), by list: its other readers
    /// meanwhile wait for the same hold.
    let liveHolds = LiveHolds()
    /// Blocking reloads of low-latency playlists under way, by origin URL.
    /// Manifest fetches under way, by origin URL (blocking reloads apart): identical requests
    /// share one (`sharedManifest`).
    let manifestFetches = SingleFlight<Result<CollectedAnswer, GatewayFailure>>()
    /// Bytes of playlists and MPDs being read from origins, in all (`--manifest-memory`): each
    /// may be 16 MiB, and distinct URLs (or long polls) could each hold one.
    let manifestMemory: BoundedCount
    /// The target durations of the low-latency playlists read lately: how long their blocking
    /// reloads may wait at the origin.
    let lowLatencyTargets = LowLatencyTargets()
    /// Live playlists' media sequence numbers, to tell one that started over.
    let liveSequences = LiveSequences()
    let liveQueued = RecentlyQueued(interval: .seconds(600))
    /// Responses being sent, which a stop lets end.
    public let inFlight = InFlightResponses()
    /// Origins the tracker refused and this node allows, warned of once per ten minutes.
    let trackerRefusals = RecentlyQueued(interval: .seconds(600), capacity: 1_000)
    /// The Representations of live MPDs that this node's players play.
    let liveRepresentations = LiveRepresentations()
    /// VOD playlists' objects in playback order, for prefetching the next segments.
    let playOrder = PlayOrder()
    /// The public URL, fixed once the server is bound (see `GatewayConfiguration.publicURLIsDefault`).
    let publicURL: Mutex<String>
    let logger: Logger
    let started = ContinuousClock.now
    /// The tracker this process runs, for `/peers`.
    let tracker = Mutex<SwarmTracker?>(nil)
    public static let version = "0.1.0"
    /// The largest buffer handed to the HTTP writer at once.
    static let writeChunk = 16 << 10
    /// SPEC section 1: a request line longer than this is answered 414.
    static let maxRequestTarget = 8 << 10

    public init(
        configuration: GatewayConfiguration, origin: any OriginFetching, node: SwarmNode, identity: SwarmIdentity,
        stats: TrafficStats = TrafficStats(), logger: Logger
    ) {
        self.identity = identity
        self.configuration = configuration
        self.origin = origin
        self.node = node
        self.hotPieces = HotPieces(capacity: configuration.memoryCacheSize)
        self.manifestMemory = BoundedCount(configuration.manifestMemory)
        self.stats = stats
        self.uploads = UploadSwitch()
        self.publicURL = Mutex(configuration.publicURL)
        self.admin = AdminAccess(token: configuration.adminToken)
        self.logger = logger
    }

    /// Tells the responder the port the server was bound to.
    public func serverBound(port: Int) {
        guard configuration.publicURLIsDefault else { return }
        publicURL.withLock { $0 = GatewayConfiguration.defaultPublicURL(host: configuration.host, port: port) }
    }

    public var currentPublicURL: String { publicURL.withLock { $0 } }

    /// The tracker this process runs (embedded, or as `swarmgate tracker`).
    public func attach(_ tracker: SwarmTracker) { self.tracker.withLock { $0 = tracker } }

    /// Answers `request`. The response holds a token of `inFlight` while it is made; a body
    /// that streams captures it (`sending`) and holds it while it is sent, so that a stop lets
    /// it end, and its channel hand on what it still buffers (`ResponseDrain`). (A wrapper
    /// around every large body cost 11 KB per slow connection; watching each channel until it
    /// had handed everything on cost the cached-object benchmark 8%.)
    public func respond(to request: Request, context: Context) async throws -> Response {
        try await Self.$sending.withValue(inFlight.begin(on: context.channel)) { try await answer(request, context: context) }
    }

    /// `body`'s result, or `cut` if a stop cuts this response first (`InFlightResponses.drain`,
    /// when the time it gives responses in flight is up) or the task is cancelled (a stop at
    /// once); `body` is cancelled then. For the
    /// waits on an origin before a response's head: a head that does not come, a playlist
    /// trickling in, a blocking reload held. The stop waited for each until its own timeout
    /// (a minute and more, past systemd's 30 s), and a shared playlist fetch ignores its
    /// waiters' cancellation. Only these waits pay for the task of their own (a cache hit's
    /// time to first byte grew 0.15 ms when every request did).
    static func stoppable<T: Sendable>(cut: T, _ body: @escaping @Sendable () async -> T) async -> T {
        guard let token = sending else { return await body() }
        let race = StopRace<T>()
        defer { token.onCut(nil) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { c in
                race.waiter.withLock { $0 = c }
                let task = Task {
                    let value = await body()
                    race.waiter.withLock { $0.take() }?.resume(returning: value)
                }
                race.work.withLock { $0 = task }
                token.onCut { race.cut(with: cut) }
            }
        } onCancel: {
            // Answered at once too: the work may not heed its cancellation (a shared playlist
            // fetch goes on for its other waiters), and a stop at once waited for it.
            race.cut(with: cut)
        }
    }

    /// What a wait cut by a stop answers.
    static let stopping = GatewayFailure(.serviceUnavailable, "the gateway is stopping")

    /// A `stoppable` wait: whichever of its work and a stop's cut comes first resumes it.
    final class StopRace<T: Sendable>: Sendable {
        let waiter = Mutex<CheckedContinuation<T, Never>?>(nil)
        let work = Mutex<Task<Void, Never>?>(nil)

        /// Cancels the work and answers `value`, unless the work answered first.
        func cut(with value: T) {
            work.withLock { $0 }?.cancel()
            waiter.withLock { $0.take() }?.resume(returning: value)
        }
    }

    /// The in-flight token of the response being made, for a body that streams to hold.
    @TaskLocal static var sending: InFlightResponses.Token?

    func answer(_ request: Request, context: Context) async throws -> Response {
        let start = ContinuousClock.now
        let target = request.uri.description
        var route = "proxy"
        var xresid: String?
        let response: Response
        do {
            guard target.utf8.count <= Self.maxRequestTarget else {
                throw GatewayFailure(.uriTooLong, "request line longer than 8 KiB")
            }
            if let refusal = request.headers[HTTP1Rules.refusalField] {
                // The mark is this gateway's own (a client's is taken off); a code that is not
                // an error's is read as 400 all the same.
                let code = Int(refusal.prefix(3)).flatMap { (400...599).contains($0) ? $0 : nil } ?? 400
                throw GatewayFailure(HTTPResponse.Status(code: code), String(refusal.dropFirst(4)))
            }
            let path = target.prefix { $0 != "?" }
            if let via = request.headers[.via], let refused = Self.refusal(via: via, proxyPath: Self.isProxyPath(path)) {
                throw refused
            }
            if path == "/prepare" || path == "/jobs" || path.hasPrefix("/jobs/") {
                route = path.hasPrefix("/jobs/") ? "/jobs/*" : String(path)
                if let refused = admin.failure(adminVerdict(request, context)) {
                    throw refused
                }
                response = try await jobsAPI(path: path, request: request)
                return finish(response, request: request, route: route, xresid: nil, start: start)
            }
            if path == "/bans" {
                route = "/bans"
                if let refused = admin.failure(adminVerdict(request, context)) {
                    throw refused
                }
                response = try bans(request)
                return finish(response, request: request, route: route, xresid: nil, start: start)
            }
            if request.method == .options && Self.isProxyPath(path) {
                // A browser's preflight for a player on another site (a `Range` request).
                let headers = PlayerHeaders.preflight(
                    origin: request.headers[.origin], requestHeaders: request.headers[.accessControlRequestHeaders],
                    policy: configuration.corsOrigins)
                response = Response(status: .noContent, headers: headers, body: .init())
                return finish(response, request: request, route: "preflight", xresid: nil, start: start)
            }
            guard request.method == .get || request.method == .head else {
                throw GatewayFailure(.methodNotAllowed, "only GET and HEAD", headers: [.allow: Self.isProxyPath(path) ? "GET, HEAD, OPTIONS" : "GET, HEAD"])
            }
            switch path {
            case "/health": route = "/health"; response = health()
            case "/ready": route = "/ready"; response = ready()
            case "/metrics": route = "/metrics"; response = metrics()
            case "/stat": route = "/stat"; response = try stat(query: request.uri.queryParameters.get("xresid"))
            case "/xdfs.p2p.com/feature":
                route = "/xdfs.p2p.com/feature"
                // Reading the switch is anyone's; turning it is the operator's, as /prepare
                // is (a GET that any page could make a browser send turned uploads off).
                if request.uri.queryParameters.get("upload") != nil,
                    let refused = admin.failure(adminVerdict(request, context))
                {
                    throw refused
                }
                response = feature(request)
            case _ where path.hasPrefix("/peer/v1/"): route = "/peer/v1/*"; response = try await peerPiece(request, path: path)
            case "/peers": route = "/peers"; response = try peers()
            default:
                guard configuration.role == .node else { throw GatewayFailure(.notFound, "this is a tracker: players use a gateway node") }
                let proxy = try decode(target)
                route = "/" + proxy.virtualHost.rawValue + "/*"
                xresid = proxy.xresid.value
                response = try await serve(proxy, request: request)
            }
        } catch let failure as GatewayFailure {
            response = failure.response
        }
        return finish(response, request: request, route: route, xresid: xresid, start: start)
    }

    /// Whether `request` may use the operator's endpoints (`AdminAccess`).
    func adminVerdict(_ request: Request, _ context: GatewayRequestContext) -> AdminAccess.Verdict {
        admin.verdict(
            remote: context.remoteAddress, authorization: request.headers[.authorization],
            fromWebPage: AdminAccess.isFromWebPage(origin: request.headers[.origin], fetchSite: request.headers[Self.fetchSite]))
    }

    static let fetchSite = HTTPField.Name("Sec-Fetch-Site")!

    /// This process's name in the `Via` header of its origin requests (`swarmgate-` and eight
    /// random hex digits): a request that carries it came from this gateway.
    static let pseudonym = "swarmgate-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)

    /// A request that a swarmgate gateway made to its origin (its `Via` names one): never the
    /// operator's, so it reaches no endpoint of this node's own (`/jobs` lists origin URLs
    /// with their tokens to loopback callers, and the gateway's own fetch comes from
    /// loopback); and one from this very gateway, to a proxy URL, is a loop (508), which a
    /// proxy URL that names the gateway inside itself would otherwise run many times over.
    static func refusal(via: String, proxyPath: Bool) -> GatewayFailure? {
        let hops = via.split(separator: ",").compactMap { $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first }
        if hops.contains(where: { $0 == pseudonym }) {
            return GatewayFailure(HTTPResponse.Status(code: 508, reasonPhrase: "Loop Detected"), "this request came from this gateway: the URL names the gateway itself")
        }
        if !proxyPath && hops.contains(where: { $0.hasPrefix("swarmgate-") }) {
            return GatewayFailure(.forbidden, "a gateway's request to its origin reaches proxy paths only")
        }
        return nil
    }

    /// Whether `path` is a proxy URL's (a virtual host's), not one of the node's endpoints.
    static func isProxyPath(_ path: Substring) -> Bool {
        let segments = path.split(separator: "/", maxSplits: 1)
        return path != "/xdfs.p2p.com/feature" && segments.count == 2 && ProxyURL.VirtualHost(rawValue: String(segments[0])) != nil
    }

    /// Counts and logs an answer: one structured line per request. Answers on players' paths
    /// (proxy URLs) get `PlayerHeaders`.
    func finish(_ response: Response, request: Request, route: String, xresid: String?, start: ContinuousClock.Instant) -> Response {
        var response = response
        if Self.isProxyPath(request.uri.description.prefix { $0 != "?" }) {
            PlayerHeaders.add(to: &response.headers, origin: request.headers[.origin], policy: configuration.corsOrigins)
        }
        stats.countRequest(route: route, status: Int(response.status.code))
        var meta: Logger.Metadata = [
            "request.method": "\(request.method)", "request.route": "\(route)",
            "response.status": "\(response.status.code)", "duration_ms": "\(Self.milliseconds(ContinuousClock.now - start))",
        ]
        if let xresid { meta["xresid"] = "\(xresid)" }
        logger.info("request", metadata: meta)
        return response
    }

    static func milliseconds(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }

    func decode(_ target: String) throws(GatewayFailure) -> ProxyURL {
        do {
            return try ProxyURL(requestTarget: target)
        } catch {
            throw GatewayFailure(error.code == .unknownVirtualHost ? .notFound : .badRequest, error.message)
        }
    }

    // MARK: node endpoints

    func health() -> Response {
        let uptime = ContinuousClock.now - started
        return JSONBody.response([
            ("status", .string("ok")), ("version", .string(Self.version)), ("uptime_s", .int(Int(uptime.components.seconds))),
        ])
    }

    func ready() -> Response {
        var failing: [String] = []
        if !Self.isWritableDirectory(configuration.cacheDirectory) { failing.append("cache directory not writable") }
        if node.store.indexIsFailing { failing.append("piece index not written (see the log)") }
        do { try node.registry.ping() } catch { failing.append("registry not reachable: \(error)") }
        // A stop under way lets its responses end: a balancer sends the next ones elsewhere.
        if inFlight.isStopping { failing.append("stopping") }
        // A tracker that refuses this node's login (a wrong app id or secret) is a setting to
        // mend; one that is away is not (the node serves from its cache and the CDN meanwhile,
        // and every node failing its check at once would take the service down with it).
        if let refusal = node.link?.loginRefusal { failing.append("the tracker refuses this node's login: \(refusal) (check the app id and secret)") }
        if failing.isEmpty {
            return JSONBody.response([("status", .string("ready"))])
        }
        return JSONBody.response(status: .serviceUnavailable, [("status", .string("not ready")), ("failing", .string(failing.joined(separator: "; ")))])
    }

    static func isWritableDirectory(_ path: String) -> Bool {
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let probe = (path as NSString).appendingPathComponent(".ready-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        guard FileManager.default.createFile(atPath: probe, contents: Data("ok".utf8)) else { return false }
        try? FileManager.default.removeItem(atPath: probe)
        return true
    }

    func metrics() -> Response {
        stats.observeStore(bytes: node.store.usedBytes, diskShortages: node.store.diskShortages)
        if let tracker = tracker.withLock({ $0 }) {
            let load = tracker.load
            stats.observeTracker(sessions: load.sessions, announcedObjects: load.announcedObjects, bannedPeers: tracker.bannedPeers)
        }
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
            body: .init(byteBuffer: ByteBuffer(bytes: stats.prometheusText())))
    }

    func stat(query xresid: String?) throws(GatewayFailure) -> Response {
        let t: TrafficStats.Totals
        if let xresid {
            // A name no stream can have is the caller's mistake, not a stream with no traffic.
            do { _ = try XResID(xresid) } catch { throw GatewayFailure(.badRequest, error.message) }
            t = stats.stream(xresid) ?? TrafficStats.Totals()
        } else {
            t = stats.total
        }
        var fields: [(String, JSONBody.Value)] = []
        if let xresid { fields.append(("xresid", .string(xresid))) }
        fields += [
            ("cdnBytes", .int(Int(t.cdnBytes))), ("p2pBytes", .int(Int(t.p2pBytes))), ("cacheBytes", .int(Int(t.cacheBytes))),
            ("uploadBytes", .int(Int(t.uploadBytes))), ("prepareBytes", .int(Int(t.prepareBytes))), ("peers", .int(t.peers)),
            ("p2pRatio", .double(t.p2pRatio)),
        ]
        if xresid == nil {
            let fallbacks = stats.fallbacks
            fields += [
                ("badPieces", .int(stats.badPieces)),
                ("fallbacks", .object(TrafficStats.FallbackReason.allCases.map { ($0.rawValue, .int(fallbacks[$0] ?? 0)) })),
            ]
        }
        return JSONBody.response(fields)
    }

    /// The peer ids logged in to this process's tracker.
    func peers() throws(GatewayFailure) -> Response {
        guard let tracker = tracker.withLock({ $0 }) else { throw GatewayFailure(.notFound, "this node logs in to another tracker") }
        return JSONBody.response([("peers", .array(tracker.peerIDs.map { .string($0) }))])
    }

    /// `GET /bans`: what the tracker of this process proved against peers and still counts,
    /// by URL; `DELETE /bans?url=URL`: forgets it (`SwarmTracker.liftBan`). The operator's.
    func bans(_ request: Request) throws(GatewayFailure) -> Response {
        guard let tracker = tracker.withLock({ $0 }) else { throw GatewayFailure(.notFound, "this node logs in to another tracker") }
        func fields(_ url: String, _ r: PeerOffences) -> JSONBody.Value {
            let date = ISO8601DateFormatter()
            return .object([
                ("url", .string(url)), ("offences", .int(r.count)), ("lastOffence", .string(date.string(from: r.last))),
                ("bannedUntil", r.bannedUntil.map { .string(date.string(from: $0)) } ?? .null),
            ])
        }
        switch request.method {
        case .get, .head:
            return JSONBody.response([("bans", .array(tracker.offences().map { fields($0.url, $0.record) }))])
        case .delete:
            guard let url = request.uri.queryParameters.get("url"), !url.isEmpty else {
                throw GatewayFailure(.badRequest, "DELETE /bans needs url=URL: the peer URL to forget")
            }
            let key = SwarmTracker.banKey(url)
            let lifted: PeerOffences?
            do { lifted = try tracker.liftBan(url) } catch {
                throw GatewayFailure(.internalServerError, "lifted until the tracker restarts: its database did not forget it: \(error)")
            }
            guard let lifted else { throw GatewayFailure(.notFound, "no offences on record for \(key)") }
            logger.notice("ban lifted by the operator", metadata: ["url": "\(key)", "offences": "\(lifted.count)"])
            return JSONBody.response([("lifted", fields(key, lifted))])
        default:
            throw GatewayFailure(.methodNotAllowed, "GET or DELETE", headers: [.allow: "GET, HEAD, DELETE"])
        }
    }

    func feature(_ request: Request) -> Response {
        if let value = request.uri.queryParameters.get("upload") {
            switch value {
            case "0": uploads.set(false)
            case "1": uploads.set(true)
            default:
                return JSONBody.response(status: .badRequest, [("ret", .int(-1)), ("msg", .string("upload must be 0 or 1"))])
            }
        }
        return JSONBody.response([
            ("ret", .int(0)), ("msg", .string("ok")), ("download", .bool(true)), ("upload", .bool(uploads.isOn)),
        ])
    }

    // MARK: proxying

    func serve(_ proxy: ProxyURL, request: Request) async throws(GatewayFailure) -> Response {
        let clientRange = request.headers[.range]
        if let clientRange {
            do { _ = try RangeRequest.resolve(clientRange, length: .max) } catch {
                throw GatewayFailure(.badRequest, "bad Range header")
            }
        }
        // What is streamed from the origin as it is (a key, a path that turned out not to be a
        // media object) takes the whole copy under an `If-Range`: the range asked of the
        // origin, or cut here, could be of another copy than the client's (RFC 9110 13.1.5).
        let passedRange = request.headers[.ifRange] == nil ? clientRange : nil
        let path = proxy.origin.path.lowercased()
        let manifestHint = proxy.virtualHost == .hls && !proxy.isKey
            && (path.hasSuffix(".m3u8") || path.hasSuffix(".m3u") || path.hasSuffix(".mpd"))
        // Whether the registry found a playlist or an MPD at this media path (the origin's answer
        // decides, SPEC 1): it is fetched below as one, whole (ffmpeg asks playlists for
        // `bytes=0-`, which would have it sent as it is) and shared by the players who ask at once.
        var manifestAtMediaPath = false
        // A path without a media extension is a media object too when a playlist listed it as
        // one (a segment, an init section, a part) or the registry knows it: it was asked of
        // the origin first to see what it is, a request per object beyond the registry's, and
        // one with a Range answered 206 went around the cache.
        if !proxy.isKey && !manifestHint
            && (proxy.virtualHost == .file || Self.hasMediaExtension(path) || playOrder.lists(Self.objectKey(proxy))
                || node.registry.entry(Self.objectKey(proxy)) != nil)
        {
            if let served = try await serveObject(
                proxy, clientRange: clientRange, conditions: Conditions(request.headers), method: request.method,
                manifestHere: proxy.virtualHost == .hls)
            {
                return served
            }
            manifestAtMediaPath = true
        }
        let answer: OriginAnswer
        if let wait = Self.blockingReloadWait(
            proxy, configured: configuration.originIdleTimeout, targetDuration: lowLatencyTargets.seconds(of: Self.playlistName(proxy)))
        {
            answer = try await sharedManifest(proxy, idleTimeout: wait, longPoll: true)
        } else if manifestHint || manifestAtMediaPath {
            // A live playlist's players reload it together: one origin fetch for those that
            // ask while it is under way (each went to the origin).
            answer = try await sharedManifest(proxy, idleTimeout: nil, longPoll: false)
        } else {
            do {
                // A key is bytes (16 for AES-128): a "key" of gigabytes is a way around the cache.
                answer = try await origin.fetch(
                    OriginFetch(url: proxy.origin.string, range: manifestHint ? nil : passedRange, maxBodySize: proxy.isKey ? Self.maxKeySize : nil))
            } catch {
                throw error.failure
            }
        }
        let contentType = answer.header("content-type")
        let mayBeManifest = proxy.virtualHost == .hls && !proxy.isKey && answer.status == 200
        if mayBeManifest && (manifestHint || ManifestFormat.detect(body: [UInt8](), contentType: contentType, path: nil) != nil) {
            return try await rewriteManifest(answer, proxy: proxy, head: [], method: request.method)
        }
        // Wait for the first bytes before answering: an origin that stalls now still gets a
        // 504, and the bytes tell a playlist served at any path and type from a media object.
        let iterator = ChunkIterator(answer.body)
        let first: [UInt8]
        do {
            first = try await iterator.next() ?? []
        } catch {
            throw (error as? OriginFetchError)?.failure ?? GatewayFailure(.badGateway, "origin failed: \(error)")
        }
        var remaining = answer
        remaining.body = AsyncThrowingStream<[UInt8], any Error> { try await iterator.next() }
        if mayBeManifest && ManifestFormat.detect(body: first, contentType: contentType, path: nil) != nil {
            return try await rewriteManifest(remaining, proxy: proxy, head: first, method: request.method)
        }
        if !proxy.isKey && answer.status == 200,
            let served = try await serveObject(proxy, clientRange: clientRange, conditions: Conditions(request.headers), method: request.method)
        {
            // A media object at a path that did not say so: it goes through the cache too.
            return served
        }
        return try streamMedia(remaining, proxy: proxy, clientRange: passedRange, head: first, method: request.method)
    }

    /// A manifest's whole body (after `head`, the bytes already read), up to the size cap.
    /// Its bytes count against `manifestMemory` while it is read: past it, 503. From an
    /// origin, it is whole within `limit` (left out: three `--origin-idle-timeout`s; `.some(nil)`:
    /// no limit): an origin that sent a byte within each held the request, and every player
    /// of the list that joined it, without end. Bytes a shared fetch read already are taken as
    /// they are.
    func collectManifest(_ answer: OriginAnswer, head: [UInt8] = [], within limit: Duration?? = .none) async throws(GatewayFailure) -> [UInt8] {
        guard !answer.bodyInMemory, let limit = limit ?? configuration.originIdleTimeout * 3 else {
            return try await collectManifestBody(answer, head: head)
        }
        let stopping = Result<[UInt8], GatewayFailure>.failure(Self.stopping)
        let collected = await Self.stoppable(cut: stopping) { [self] in
            await SwarmNode.cancelling(after: limit) { [self] () async -> Result<[UInt8], GatewayFailure> in
                do throws(GatewayFailure) { return .success(try await collectManifestBody(answer, head: head)) } catch { return .failure(error) }
            }
        }
        guard let collected else {
            throw GatewayFailure(.gatewayTimeout, "origin did not send the whole manifest within \(limit.components.seconds) s")
        }
        return try collected.get()
    }

    private func collectManifestBody(_ answer: OriginAnswer, head: [UInt8]) async throws(GatewayFailure) -> [UInt8] {
        var body = head
        var reserved = 0
        defer { manifestMemory.give(reserved) }
        do {
            for try await chunk in answer.body {
                guard manifestMemory.take(chunk.count) else {
                    throw GatewayFailure(
                        .serviceUnavailable, "too many playlists and MPDs are being read at once (--manifest-memory)",
                        headers: [.retryAfter: "1"])
                }
                reserved += chunk.count
                body += chunk
                if body.count > configuration.maxManifestSize {
                    throw GatewayFailure(.badGateway, "manifest larger than \(configuration.maxManifestSize) bytes")
                }
            }
        } catch let failure as GatewayFailure {
            throw failure
        } catch {
            throw GatewayFailure(.badGateway, "origin failed mid-body: \(error)")
        }
        return body
    }

    /// How this gateway rewrites an HLS playlist of `proxy`'s stream.
    /// A media playlist imports the variables of the master its player read, which its URL
    /// carries (`xvars`); none are kept here between requests.
    func hlsOptions(_ proxy: ProxyURL, collectReferences: Bool) throws(GatewayFailure) -> HLSRewriter.Options {
        var options = HLSRewriter.Options()
        options.gateway = currentPublicURL
        options.xresid = proxy.xresid
        options.inheritQuery = configuration.inheritQuery
        options.keyURIs = configuration.keyURIs
        if let carried = proxy.variables {
            do { options.importedVariables = try PlaylistVariables.decode(carried) } catch {
                throw GatewayFailure(.badRequest, error.message)
            }
            options.variablesParameter = carried
        }
        options.collectReferences = collectReferences
        return options
    }

    func rewriteManifest(_ answer: OriginAnswer, proxy: ProxyURL, head: [UInt8], method: HTTPRequest.Method) async throws(GatewayFailure) -> Response {
        let body = try await collectManifest(answer, head: head)
        let effective: OriginURL
        do { effective = try OriginURL(answer.effectiveURL) } catch { effective = proxy.origin }
        let format = ManifestFormat.detect(body: body, contentType: answer.header("content-type"), path: effective.path) ?? .hls
        let output: [UInt8]
        let contentType: String
        // A live playlist's new segments, whose preparation its answer waits for, and the
        // list whose hold under way (another reader's) it waits for too.
        var held: [(key: ObjectKey, url: String, duration: Double?)] = []
        var holdName: String?
        // A live list, which changes: answered `no-cache` when the origin said nothing.
        var changes = false
        do {
            switch format {
            case .hls:
                // A VOD playlist's objects are queued for preparation: once a minute at most,
                // since its list does not change (collecting references costs time).
                // A live one's newest segments are, as it refreshes: once a second at most.
                // The request's own variables (`xvars`) first: forged or malformed ones are the
                // caller's error before anything shared is claimed, and the memos below are
                // the list's under those variables, so that they change no other request's.
                var options = try hlsOptions(proxy, collectReferences: false)
                let playlist = proxy.xresid.value + " " + effective.authority + effective.path + (proxy.variables.map { " xvars=" + $0 } ?? "")
                let vod = Self.isVOD(body)
                changes = !vod
                let readAhead = vod && queuedPlaylists.claim(playlist)
                // Renditions may differ by query only (`live.m3u8?v=hi`); a low-latency
                // playlist's blocking reloads (`_HLS_msn`) do not, and are not held: their
                // players fetch a new segment's parts before it is whole.
                let lowLatency = !vod && Self.contains(body, Self.partTag)
                if lowLatency, let target = Self.targetDuration(body) { lowLatencyTargets.note(target, of: Self.playlistName(proxy)) }
                // Live tails and their hold follow `--read-ahead`; a restart is looked for in
                // any case (with `--read-ahead 0` a restarted encoder's players got the old
                // run's bytes).
                let tails = !vod && configuration.readAhead != .zero
                let listName = lowLatency ? playlist : playlist + "?" + (effective.query ?? "")
                // Looked at on every read: a list that started over may read as it did before.
                // By the query too (renditions may differ by query only), less a low-latency
                // reload's own parameters.
                let restartName = playlist + "?" + (effective.query ?? "").split(separator: "&").filter { !$0.hasPrefix("_HLS_") }.joined(separator: "&")
                let restarted = !vod && liveSequences.wentBack(restartName, to: Self.mediaSequence(body), listing: Self.listing(body))
                // A list that started over lately has what it lists checked at each read: the
                // new run reaches the old one's names later too.
                let startedOver = !vod && liveSequences.restarted(restartName) != nil
                let liveTail = tails && (restarted || liveListingDue(listName, body))
                options.collectReferences = readAhead || liveTail || startedOver
                let result: HLSRewrite
                do { result = try HLSRewriter(playlistURL: effective, options: options).rewrite(body) } catch {
                    if readAhead { queuedPlaylists.release(playlist) }  // nothing was planned
                    throw error
                }
                if result.kind == .media {
                    if readAhead && !prepareAhead(result.references, xresid: proxy.xresid, playlistQuery: proxy.origin.query) {
                        skippedReadAhead(playlist)
                    }
                    if startedOver {
                        doubtCopiesFromBefore(mediaObjects(result.references, xresid: proxy.xresid, playlistQuery: proxy.origin.query), list: restartName, xresid: proxy.xresid)
                    }
                    if liveTail {
                        let queued = prepareLiveTail(result.references, xresid: proxy.xresid, playlistQuery: proxy.origin.query)
                        if !lowLatency { held = queued }
                    }
                    if tails && !lowLatency { holdName = playlist }
                }
                output = result.output
                contentType = "application/vnd.apple.mpegurl"
            case .dash:
                let rewrite = try rewriteDASH(body, url: effective, xresid: proxy.xresid)
                output = rewrite.output
                // A static MPD's segments are queued as a VOD playlist's are: listing a long
                // MPD's segments takes tens of milliseconds (README), so after the answer; a
                // player's first segment that comes first opens the window when the list
                // arrives. A dynamic one's live tails are queued as a live playlist's are,
                // claimed per path (one MPD lists every Representation; per-viewer tokens
                // would list it once per viewer): a short MPD's before the answer, which
                // waits for the new segments, a long one's after it, without the wait.
                let mpd = proxy.xresid.value + " " + effective.authority + effective.path
                let query = proxy.origin.query
                changes = rewrite.isDynamic
                if rewrite.isDynamic {
                    // An MPD whose availabilityStartTime changed started over (an encoder
                    // restarted, numbering its segments from the start again). By path (a
                    // query may name the start time it asks for); moving on only. Looked for
                    // whatever `--read-ahead` says, as for a playlist.
                    let restarted = liveSequences.startedOver(mpd, at: Self.availabilityStartTime(body))
                    let inline = body.count <= Self.inlineLiveMPDSize
                    // The origin's clock, as its Date says (its live edge), else ours.
                    let now = answer.header("date").flatMap { HTTPDate.seconds($0) } ?? Date().timeIntervalSince1970
                    if configuration.readAhead == .zero {
                        // No live tails: what a list that started over lately names is still
                        // checked (a short MPD's before the answer, as its tails would be).
                        if liveSequences.restarted(mpd) != nil {
                            let doubt: @Sendable () -> Void = { [self] in
                                guard let listed = try? rewriteDASH(body, url: effective, xresid: proxy.xresid, collectSegments: true, now: now) else { return }
                                doubtCopiesFromBefore(listed.segments, xresid: proxy.xresid, mpdQuery: query, mpd: mpd)
                            }
                            if inline { doubt() } else { Task.detached(priority: .utility) { doubt() } }
                        }
                    } else {
                        if inline { holdName = mpd }
                        if restarted || liveListingDue(mpd, body) {
                            let list: @Sendable () -> [(key: ObjectKey, url: String, duration: Double?)] = { [self] in
                                guard let listed = try? rewriteDASH(body, url: effective, xresid: proxy.xresid, collectSegments: true, now: now) else { return [] }
                                return prepareLiveTails(listed.segments, xresid: proxy.xresid, mpdQuery: query, mpd: mpd)
                            }
                            if inline { held = list() } else { Task.detached(priority: .utility) { _ = list() } }
                        }
                    }
                } else if queuedPlaylists.claim(mpd) {
                    let queued = readAheadPlans.submit { [self] in
                        guard let listed = try? rewriteDASH(body, url: effective, xresid: proxy.xresid, collectSegments: true) else { return }
                        prepareAhead(listed.segments, xresid: proxy.xresid, mpdQuery: query)
                    }
                    if !queued { skippedReadAhead(mpd) }
                }
                contentType = "application/dash+xml"
            }
        } catch let failure as GatewayFailure {
            throw failure  // the request's own (forged variables), not the origin's
        } catch let error as ManifestError where error.isMissingImport && proxy.variables == nil {
            throw GatewayFailure(
                .badRequest, "this media playlist imports its master's variables: ask for it by the master's variant URL, which carries them (xvars): \(error)")
        } catch {
            throw GatewayFailure(.badGateway, "origin sent a manifest that cannot be rewritten: \(error)")
        }
        // The new segments (not init sections) held for, or another reader's hold under way.
        let segments = held.filter { $0.duration != nil }
        let hold = configuration.liveHold == .zero ? nil : holdName.flatMap { name in
            segments.isEmpty ? liveHolds.current(name) : liveHolds.start(name) { [self] in await holdForLiveTail(segments) }
        }
        if let hold {
            let holding = ContinuousClock.now
            await hold.value
            stats.noteLiveHold(.now - holding)
        }
        var headers: HTTPFields = [.contentType: contentType]
        for name in ["cache-control", "expires", "last-modified"] {
            if let v = answer.relayed(name), let field = HTTPField.Name(name) { headers[field] = v }
        }
        // A cache between the gateway and its players would otherwise keep a live list by
        // heuristics, and its players would stall on an old one.
        if changes && headers[.cacheControl] == nil && headers[.expires] == nil { headers[.cacheControl] = "no-cache" }
        guard method == .get else { return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: output))) }
        // Counted as the bytes the player gets (the rewritten list), once they are sent: a
        // rewrite that failed, or a player who left during a live hold, got none.
        let (stats, xresid, source) = (stats, proxy.xresid.value, answer.servedBefore ? TrafficStats.Source.cache : .cdn)
        let sending = Self.sending  // held while sent: a stop lets it end
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody(contentLength: output.count) { writer in
                try await writer.write(ByteBuffer(bytes: output))
                try await writer.finish(nil)
                stats.add(output.count, from: source, xresid: xresid)
                withExtendedLifetime(sending) {}
            })
    }

    /// Whether live list `name` (a playlist or an MPD) is to be listed for its tail now: its
    /// content changed since this node last listed it (new segments: at once, whoever reads
    /// it), else once a second at most (a template MPD's tail moves with the clock alone).
    func liveListingDue(_ name: String, _ body: [UInt8]) -> Bool {
        var h = Hasher()
        body.withUnsafeBytes { h.combine(bytes: $0) }
        let changed = liveVersions.claim(name + " " + String(h.finalize()))
        let due = liveRefreshes.claim(name)
        return changed || due
    }

    /// A live playlist's `EXT-X-MEDIA-SEQUENCE` (0 without one, RFC 8216 4.3.3.2).
    static func mediaSequence(_ body: [UInt8]) -> Int {
        guard let at = firstIndex(of: mediaSequenceTag, in: body) else { return 0 }
        let digits = body[(at + mediaSequenceTag.count)...].prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        return digits.count <= 18 ? Int(String(decoding: digits, as: UTF8.self)) ?? 0 : 0
    }

    static let mediaSequenceTag = Array("#EXT-X-MEDIA-SEQUENCE:".utf8)
    static let extinfTag = Array("#EXTINF:".utf8)
    static let skippedTag = Array("SKIPPED-SEGMENTS=".utf8)

    /// The segments a playlist stands for: those it lists, and those a delta update
    /// (`EXT-X-SKIP`, RFC 8216bis 4.4.5.2) leaves out. A delta update lists far fewer than the
    /// full reload before it, at the same media sequence: not a list that started over.
    static func listing(_ body: [UInt8]) -> Int {
        var skipped = 0
        if let at = firstIndex(of: skippedTag, in: body) {
            let digits = body[(at + skippedTag.count)...].prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            skipped = digits.count <= 9 ? Int(String(decoding: digits, as: UTF8.self)) ?? 0 : 0
        }
        return count(extinfTag, in: body) + skipped
    }

    /// How many times `needle` occurs in `body`.
    static func count(_ needle: [UInt8], in body: [UInt8]) -> Int {
        var n = 0, from = 0
        while from < body.count, let at = firstIndex(of: needle, in: body, from: from) {
            n += 1
            from = at + needle.count
        }
        return n
    }

    /// A dynamic MPD's `availabilityStartTime` (the first one in it: the MPD element's), as
    /// written; nil without one.
    static func availabilityStartTime(_ body: [UInt8]) -> String? {
        guard let at = firstIndex(of: availabilityStartTag, in: body) else { return nil }
        let value = body[(at + availabilityStartTag.count)...].prefix(64).prefix { $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "'") }
        return String(decoding: value, as: UTF8.self)
    }

    static let availabilityStartTag = Array("availabilityStartTime=\"".utf8)
    static let partTag = Array("#EXT-X-PART:".utf8)
    static let targetDurationTag = Array("#EXT-X-TARGETDURATION:".utf8)

    /// A playlist's `EXT-X-TARGETDURATION` (whole seconds), when it gives a sane one.
    static func targetDuration(_ body: [UInt8]) -> Int? {
        guard let at = firstIndex(of: targetDurationTag, in: body) else { return nil }
        let digits = body[(at + targetDurationTag.count)...].prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        guard (1...6).contains(digits.count), let value = Int(String(decoding: digits, as: UTF8.self)), value > 0 else { return nil }
        return value
    }
    /// The largest live MPD whose tail is listed before its answer (a long DVR timeline's
    /// listing takes milliseconds).
    static let inlineLiveMPDSize = 256 << 10

    /// How long a low-latency playlist's blocking reload (`_HLS_msn`, RFC 8216bis 6.2.5.2) may
    /// wait for the origin's first byte: the origin holds it until the segment or part asked
    /// for is out, up to three target durations, so longer than the configured idle time
    /// when that is shorter than `blockingReloadLimit`. The query names it, whatever the
    /// path (a playlist may be served without an extension). Nil for any other request.
    /// `targetDuration`: the playlist's, as this node last read it (`LowLatencyTargets`); three
    /// of them, and 5 s for the way, when that is longer still (120 s at most).
    static func blockingReloadWait(_ proxy: ProxyURL, configured: Duration, targetDuration: Int? = nil) -> Duration? {
        guard proxy.virtualHost == .hls, !proxy.isKey, let query = proxy.origin.query,
            query.split(separator: "&").contains(where: { $0.hasPrefix("_HLS_msn=") })
        else { return nil }
        let held = targetDuration.map { Duration.seconds(min(3 * $0 + 5, 120)) } ?? .zero
        return max(configured, blockingReloadLimit, held)
    }

    /// The largest key relayed (`xkey=1`): keys are bytes, DRM licences kilobytes.
    static let maxKeySize = 1 << 20

    /// Three times the longest target duration low-latency streams use (6 s), with room.
    static let blockingReloadLimit = Duration.seconds(30)

    /// What names a playlist across its reloads: its origin and path (the query holds the
    /// reload's `_HLS_msn`, and tokens).
    static func playlistName(_ proxy: ProxyURL) -> String { proxy.origin.authority.lowercased() + proxy.origin.path }

    /// A manifest fetch, shared with the identical ones that arrive while it is under way (a
    /// live playlist's players reload it together), its answer collected (a manifest's size at
    /// most) and handed to each. A blocking reload (`longPoll`) waits at the origin: every
    /// low-latency player of a rendition parks the same request there, and one per node
    /// reaches the origin. It is a long poll to the origin client: the distinct ones (each
    /// rendition's, each sequence number's) never fill the host's slots that preparation and
    /// other playlists need.
    func sharedManifest(_ proxy: ProxyURL, idleTimeout: Duration?, longPoll: Bool) async throws(GatewayFailure) -> OriginAnswer {
        let url = proxy.origin.string
        let fetches = manifestFetches
        let shared = try await Self.stoppable(cut: .failure(Self.stopping)) { await fetches.run((longPoll ? "long " : "") + url) { [self] () async -> Result<CollectedAnswer, GatewayFailure> in
            let answer: OriginAnswer
            // A manifest's own bound, not `--max-object-size` (SPEC 5: that is the media's; a
            // small one refused every playlist).
            let fetch = OriginFetch(url: url, maxBodySize: configuration.maxManifestSize + 1, idleTimeout: idleTimeout, longPoll: longPoll)
            do throws(OriginFetchError) { answer = try await origin.fetch(fetch) } catch { return .failure(error.failure) }
            do throws(GatewayFailure) {
                // A blocking reload's body may come as slowly as its origin holds it.
                let limit: Duration? = longPoll ? nil : (idleTimeout ?? configuration.originIdleTimeout) * 3
                let body = try await collectManifest(answer, within: .some(limit))
                return .success(CollectedAnswer(status: answer.status, headers: answer.headers, effectiveURL: answer.effectiveURL, body: body))
            } catch {
                return .failure(error)
            }
        } }.get()
        let body = shared.body
        var answer = OriginAnswer(
            status: shared.status, headers: shared.headers, effectiveURL: shared.effectiveURL,
            body: AsyncThrowingStream { c in
                if !body.isEmpty { c.yield(body) }
                c.finish()
            })
        answer.servedBefore = !shared.firstServed.claim()
        answer.bodyInMemory = true
        return answer
    }


    /// Whether a media playlist is VOD (its segment list is final).
    static func isVOD(_ body: [UInt8]) -> Bool {
        contains(body, endList) || contains(body, vodType)
    }

    static let endList = Array("#EXT-X-ENDLIST".utf8)
    static let vodType = Array("#EXT-X-PLAYLIST-TYPE:VOD".utf8)

    /// Whether `needle` (not empty) occurs in `body`: memchr for its first byte, memcmp for the
    /// rest. (Foundation's `firstRange(of:)` on byte arrays costs about 2 ms per 20 KB playlist.)
    static func contains(_ body: [UInt8], _ needle: [UInt8]) -> Bool {
        firstIndex(of: needle, in: body) != nil
    }

    /// Where `needle` (not empty) first occurs in `body`.
    static func firstIndex(of needle: [UInt8], in body: [UInt8], from start: Int = 0) -> Int? {
        guard !needle.isEmpty, body.count >= needle.count else { return nil }
        return body.withUnsafeBytes { h in
            needle.withUnsafeBytes { n in
                let base = h.baseAddress!
                let last = h.count - n.count
                var i = max(0, start)
                while i <= last, let hit = memchr(base + i, Int32(n[0]), last - i + 1) {
                    let at = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(base + at, n.baseAddress!, n.count) == 0 { return at }
                    i = at + 1
                }
                return nil
            }
        }
    }

    /// The media objects (segments, init sections, parts) a playlist lists, in playback order,
    /// each once: its key and the origin URL a player fetches (inherited query included).
    func mediaObjects(_ references: [HLSReference], xresid: XResID, playlistQuery: String?) -> [(key: ObjectKey, url: String, duration: Double?)] {
        listedObjects(
            // Not a gap (EXT-X-GAP): it is not at the origin, and players do not load it.
            references.lazy.filter { [.segment, .map, .part].contains($0.role) && !$0.gap }.map { ($0.origin, $0.duration) },
            xresid: xresid, listQuery: playlistQuery)
    }

    /// A list's objects (origin URLs and seconds) as the gateway keys and fetches them: the
    /// list's inherited query applied, each object once.
    func listedObjects(
        _ items: some Sequence<(origin: OriginURL, duration: Double?)>, xresid: XResID, listQuery: String?
    ) -> [(key: ObjectKey, url: String, duration: Double?)] {
        var seen = Set<String>()
        var objects: [(key: ObjectKey, url: String, duration: Double?)] = []
        for (origin, duration) in items {
            let url = configuration.inheritQuery.applied(to: origin, parentQuery: listQuery)
            let key = Self.objectKey(ProxyURL(virtualHost: .hls, origin: url, xresid: xresid))
            if seen.insert(key.id).inserted { objects.append((key, url.string, duration)) }
        }
        return objects
    }

    /// Queues a VOD playlist's objects for preparation in playback order, in the background,
    /// so that they are usually ready when the player asks. False when it is not planned
    /// (`readAheadPlans` is full).
    func prepareAhead(_ references: [HLSReference], xresid: XResID, playlistQuery: String?) -> Bool {
        prepareAhead(mediaObjects(references, xresid: xresid, playlistQuery: playlistQuery))
    }

    /// A player asks for `key`: when it lies past what its list's plan told the tracker (a list
    /// longer than one `prepare`), the part of the list around it goes there too, once a
    /// minute at most, so that read-ahead follows players past the first 10,000 objects.
    func sendReadAheadPart(for key: ObjectKey) {
        guard node.link != nil, let part = playOrder.readAheadPart(key), queuedParts.claim(part.name) else { return }
        let (node, playOrder) = (node, playOrder)
        let sent = readAheadPlans.submit {
            let refs = playOrder.refs(in: (part.list, part.range))
            if !refs.isEmpty { _ = node.prepareAhead(refs) }
        }
        if !sent { queuedParts.release(part.name) }
    }

    /// A VOD list (playlist or MPD) `name` read for read-ahead was not planned: too many lists
    /// wait to be. It is planned when it is read again.
    func skippedReadAhead(_ name: String) {
        queuedPlaylists.release(name)
        stats.countSkippedReadAhead()
        logger.debug("read-ahead plans are queued to the bound: a list is not planned", metadata: ["list": "\(name)"])
    }

    /// Queues the newest segments of a live playlist for preparation, each once, as the node
    /// reads it (`LiveTail`): a new segment's preparation starts with the first node that sees
    /// it, not with its first player's request. Older segments (a long live or event
    /// playlist's past) are prepared only when a player asks.
    func prepareLiveTail(_ references: [HLSReference], xresid: XResID, playlistQuery: String?) -> [(key: ObjectKey, url: String, duration: Double?)] {
        let listed = references.filter { $0.role == .segment || $0.role == .map }
        let tail = LiveTail.of(listed, isInitialization: { $0.role == .map }, duration: \.duration)
        return prepareLiveTail(mediaObjects(tail, xresid: xresid, playlistQuery: playlistQuery))
    }

    /// Of what a live list lists, the copies held from before it started over (its media
    /// sequence went back, or its availabilityStartTime moved on: an encoder restarted and
    /// writes its names again with other bytes; every node served the last run's copies, and an
    /// fMP4 stream's old init segment made the new frames undecodable, found by an attack). At
    /// each read for a while, since the new run reaches the old one's later names too. The
    /// copies are not served until checked (`SwarmNode.doubt`), and they are queued again.
    func doubtCopiesFromBefore(_ listed: [(key: ObjectKey, url: String, duration: Double?)], list: String, xresid: XResID) {
        guard let since = liveSequences.restarted(list) else { return }
        let old = listed.filter { object in node.registry.entry(object.key).map { $0.state == .ready && $0.updated < since } ?? false }
        guard !old.isEmpty else { return }
        logger.warning("a live list that started over lists copies held from before; checking them", metadata: ["xresid": "\(xresid)", "objects": "\(old.count)"])
        for object in old { liveQueued.release(object.key.id) }
        node.doubt(old.map { ObjectRef(key: $0.key, url: $0.url, duration: $0.duration) })
    }

    /// Queues the objects of a live tail for preparation, each one once (not while the tracker
    /// is away: they would be dropped, and not queued again when it is back). Returns those
    /// queued now.
    func prepareLiveTail(_ tail: [(key: ObjectKey, url: String, duration: Double?)]) -> [(key: ObjectKey, url: String, duration: Double?)] {
        guard node.preparesNow else { return [] }
        let objects = tail.filter { liveQueued.claim($0.key.id) }
        guard !objects.isEmpty else { return [] }
        let refs = objects.map { ObjectRef(key: $0.key, url: $0.url, duration: $0.duration) }
        let node = node
        Task.detached(priority: .utility) { node.prepareAhead(refs, whole: true) }
        return objects
    }

    /// Holds a live playlist's answer until the new segments it lists are ready in the swarm,
    /// for `liveHold` at most: its players ask for a new segment the moment they see it, and
    /// would otherwise be sent to the origin (302) while the first request prepares it. This
    /// node then has their checksums, and its players get them from the swarm. A node that
    /// reads the playlist after another made them ready is not held.
    func holdForLiveTail(_ segments: [(key: ObjectKey, url: String, duration: Double?)]) async {
        let longest = segments.compactMap(\.duration).max()
        let hold = configuration.liveHold.map { Self.liveHold($0, segmentSeconds: longest) } ?? Self.liveHold(segmentSeconds: longest)
        let (done, finish) = AsyncStream.makeStream(of: Void.self)
        let node = node
        for s in segments {
            Task {
                _ = await node.resolve(s.key, url: s.url, wait: .zero, readyWithin: hold)
                finish.yield()
            }
        }
        let timer = Task {
            try? await Task.sleep(for: hold)
            finish.finish()
        }
        var ended = 0
        for await _ in done {
            ended += 1
            if ended == segments.count { break }
        }
        timer.cancel()
    }

    /// How long a live playlist's answer may wait for its new segments: a quarter of a
    /// segment's duration, from 0.25 s to 1 s (a live player's buffer holds several segments).
    static func liveHold(segmentSeconds: Double?) -> Duration {
        quarter(of: segmentSeconds, within: 0.25...1) ?? .seconds(1)
    }

    /// A configured hold (`--live-hold`), never more than half a segment: a player whose
    /// playlist comes that late has fetched most of its buffer's margin already.
    static func liveHold(_ configured: Duration, segmentSeconds: Double?) -> Duration {
        guard let seconds = segmentSeconds, seconds.isFinite else { return configured }
        // A segment of no time (`#EXTINF:0,`, or less) gets no hold: half of it is none (it
        // got the whole configured hold).
        guard seconds > 0 else { return .zero }
        // Within what a configured hold can be first: a list may give any finite duration
        // (`#EXTINF:1e17,`), which as milliseconds is past what an Int64 holds.
        return min(configured, .milliseconds(Int64(min(seconds, 3600) * 500)))
    }

    /// A quarter of a segment of `seconds`, within `range` (seconds); nil when the duration is
    /// unknown or not a number.
    static func quarter(of seconds: Double?, within range: ClosedRange<Double>) -> Duration? {
        guard let seconds, seconds.isFinite else { return nil }
        return .milliseconds(Int64(min(max(seconds / 4, range.lowerBound), range.upperBound) * 1000))
    }

    /// Queues a list's objects (in playback order) for preparation, in the background
    /// (`readAheadPlans`), or now when `planNow` (in that background already); `prefetchFirst`:
    /// in a swarm, its first segments are fetched from peers now. False when it is not
    /// planned, `readAheadPlans` being full.
    @discardableResult
    func prepareAhead(_ objects: [(key: ObjectKey, url: String, duration: Double?)], prefetchFirst: Bool = true, planNow: Bool = false) -> Bool {
        guard !objects.isEmpty else { return true }
        let refs = objects.map { ObjectRef(key: $0.key, url: $0.url, duration: $0.duration) }
        playOrder.record(refs, durations: objects.map(\.duration))
        // A player asks for the first segments next: in a swarm, those ready are fetched from
        // peers now (nothing is prepared for them: a player resuming mid-VOD never asks).
        if prefetchFirst && configuration.prefetchSegments > 0 && node.link != nil {
            prefetch(Array(refs.prefix(configuration.prefetchSegments)))
        }
        let node = node
        if planNow {
            _ = node.prepareAhead(refs)
            return true
        }
        return readAheadPlans.submit { _ = node.prepareAhead(refs) }
    }

    /// Streams a media object from the origin. When the client asked for a range and the origin
    /// ignored it (200 with a length), the range is cut here, per RFC 9110.
    func streamMedia(_ answer: OriginAnswer, proxy: ProxyURL, clientRange: String?, head: [UInt8], method: HTTPRequest.Method) throws(GatewayFailure) -> Response {
        // A 416 for the player's own range is passed on, with the origin's Content-Range.
        if answer.status >= 400 && answer.status != 416 {
            throw GatewayFailure.originAnswered(answer.status)
        }
        var headers: HTTPFields = [:]
        // The coding too: asked for none, an origin may send one all the same, and its bytes
        // went out as if plain (a gzip key).
        for name in ["content-type", "content-encoding", "content-length", "content-range", "accept-ranges", "etag", "last-modified", "cache-control", "expires"] {
            if let v = answer.relayed(name), let field = HTTPField.Name(name) { headers[field] = v }
        }
        if proxy.isKey { headers[.cacheControl] = "no-store" }
        var status = HTTPResponse.Status(code: answer.status)
        var skip: Int64 = 0
        var limit: Int64? = answer.header("content-length").flatMap { Int64($0) }
        if let clientRange, answer.status == 200, let length = limit {
            let range = try RangeAnswer(clientRange, length: length)
            if let contentRange = range.contentRange {
                status = range.status
                skip = range.first
                limit = range.count
                headers[.contentRange] = contentRange
                headers[.contentLength] = String(range.count)
            }
        }
        if method == .head {
            // Without the origin's length, none is claimed (an empty body would say 0).
            let unknown = ResponseBody { writer in try await writer.finish(nil) }
            return Response(status: status, headers: headers, body: headers[.contentLength] == nil ? unknown : .init())
        }
        let body = answer.body
        let stats = self.stats
        let xresid = proxy.xresid.value
        let contentLength = limit.map { Int($0) }
        let startSkip = skip
        let startLimit = limit
        let sending = Self.sending  // held while sent: a stop lets it end
        return Response(
            status: status, headers: headers,
            body: ResponseBody(contentLength: contentLength) { writer in
                defer { withExtendedLifetime(sending) {} }
                var toSkip = startSkip
                var left = startLimit ?? .max
                func send(_ chunk: [UInt8]) async throws -> Bool {
                    var slice = chunk[...]
                    if toSkip > 0 {
                        let n = Int(min(toSkip, Int64(slice.count)))
                        slice = slice.dropFirst(n)
                        toSkip -= Int64(n)
                    }
                    if Int64(slice.count) > left { slice = slice.prefix(Int(left)) }
                    // The writer's backpressure counts buffers, not bytes: small buffers keep
                    // what waits for a slow player small.
                    while !slice.isEmpty {
                        let part = slice.prefix(Self.writeChunk)
                        try await writer.write(ByteBuffer(bytes: part))
                        stats.add(part.count, from: .cdn, xresid: xresid)
                        left -= Int64(part.count)
                        slice = slice.dropFirst(part.count)
                    }
                    return left > 0
                }
                var more = head.isEmpty ? true : try await send(head)
                if more {
                    for try await chunk in body {
                        more = try await send(chunk)
                        if !more { break }
                    }
                }
                if let contentLength, left > 0, left != .max {
                    // The origin ended early: fail the response rather than send a short one.
                    throw GatewayFailure(.badGateway, "origin sent \(contentLength - Int(left)) of \(contentLength) bytes")
                }
                try await writer.finish(nil)
            })
    }
}
