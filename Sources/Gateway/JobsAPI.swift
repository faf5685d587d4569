import Foundation
import Hummingbird
import Manifest
import PieceStore
import Swarm

/// The prepare-job API (seed 001): `POST /prepare` queues an object — or, for a playlist or an
/// MPD, every object it lists (a master's variants, every Representation) — and `GET /jobs`,
/// `POST /jobs/ID/pause`, `/resume` and `/cancel` show and steer the jobs.
extension GatewayResponder {
    func jobsAPI(path: Substring, request: Request) async throws(GatewayFailure) -> Response {
        if path == "/prepare" {
            guard request.method == .post else { throw GatewayFailure(.methodNotAllowed, "POST /prepare", headers: [.allow: "POST"]) }
            return try await prepare(request)
        }
        if path == "/jobs/status" {
            guard request.method == .post else { throw GatewayFailure(.methodNotAllowed, "POST /jobs/status", headers: [.allow: "POST"]) }
            return try await jobsStatus(request)
        }
        if path == "/jobs" {
            guard request.method == .get || request.method == .head else { throw GatewayFailure(.methodNotAllowed, "GET /jobs", headers: [.allow: "GET, HEAD"]) }
            return JSONBody.response([("jobs", .array(node.prepareQueue.jobs().map { .object(Self.fields($0)) }))])
        }
        // /jobs/ID[/pause|/resume|/cancel]
        let parts = path.dropFirst("/jobs/".count).split(separator: "/", omittingEmptySubsequences: false)
        let id = String(parts[0])
        let queue = node.prepareQueue
        let job: PrepareJob?
        switch (request.method, parts.count > 1 ? String(parts[1]) : nil) {
        case (.get, nil), (.head, nil): job = queue.job(id)
        case (.post, "pause"?): job = queue.pause(id)
        case (.post, "resume"?): job = queue.resume(id)
        case (.post, "cancel"?): job = queue.cancel(id)
        default: throw GatewayFailure(.notFound, "no such job action")
        }
        guard let job else { throw GatewayFailure(.notFound, "no job \(id)") }
        return JSONBody.response(Self.fields(job))
    }

    static func fields(_ job: PrepareJob) -> [(String, JSONBody.Value)] {
        var f: [(String, JSONBody.Value)] = [
            ("id", .string(job.id)), ("state", .string(job.state.rawValue)), ("url", .string(job.url)),
            ("xresid", .string(job.key.xresid)), ("bytesDone", .int(Int(job.bytesDone))),
            ("length", job.length.map { .int(Int($0)) } ?? .null),
            ("progress", .double(job.length.map { $0 == 0 ? 1 : Double(job.bytesDone) / Double($0) } ?? 0)),
            ("urgent", .bool(job.urgent)),
        ]
        if let e = job.error { f.append(("error", .string(e))) }
        return f
    }

    /// `POST /prepare` with `{"url": "...", "xresid": "..."}` (or the same as query
    /// parameters). The URL is an origin URL or a proxy URL of this gateway. On a node with a
    /// tracker, the tracker's registry prepares the objects (503 while it is away), and the
    /// answer's `jobs` is where they are listed.
    func prepare(_ request: Request) async throws(GatewayFailure) -> Response {
        var url = request.uri.queryParameters.get("url")
        var xresid = request.uri.queryParameters.get("xresid")
        let body = request.body
        let data: ByteBuffer
        do { data = try await body.collect(upTo: 64 << 10) } catch { throw GatewayFailure(.contentTooLarge, "body larger than 64 KiB") }
        if data.readableBytes > 0 {
            guard let json = try? JSONSerialization.jsonObject(with: Data(data.readableBytesView)) as? [String: Any] else {
                throw GatewayFailure(.badRequest, "body must be a JSON object")
            }
            url = json["url"] as? String ?? url
            xresid = json["xresid"] as? String ?? xresid
        }
        guard let url else { throw GatewayFailure(.badRequest, "url is missing") }
        let proxy = try Self.proxyForPrepare(url, xresid: xresid, publicPath: Self.urlPath(currentPublicURL))
        // A host the gateway may not fetch is refused now, not queued to fail.
        if let refusal = origin.refusal(of: proxy.origin.string) { throw GatewayFailure(.forbidden, refusal) }
        guard node.preparesNow else {
            throw GatewayFailure(.serviceUnavailable, "the tracker, whose registry prepares for this node, is away; try again")
        }
        var answer: [(String, JSONBody.Value)] = [("xresid", .string(proxy.xresid.value))]
        var refs: [ObjectRef]
        var job: PrepareJob?
        switch try await manifestFormat(proxy) {
        case .hls?: refs = try await preparePlaylist(proxy, depth: 0)
        case .dash?: refs = try await prepareMPD(proxy)
        case nil: refs = [ObjectRef(key: Self.objectKey(proxy), url: proxy.origin.string)]
        }
        var seen = Set<String>()
        refs = refs.filter { seen.insert($0.key.id).inserted }
        if refs.count == 1, node.link == nil {
            // One object on this gateway: queued before the players' read-ahead, as they would.
            // An operator's prepare: a job that failed a moment ago is run again, as a
            // playlist's objects are.
            job = node.prepareQueue.enqueue(refs[0].key, url: refs[0].url, urgent: true, retry: true)
        } else {
            // On a node, answered once the tracker has queued them: what --wait then asks for
            // is the tracker's view after this prepare, not before.
            if let refusal = await node.prepareWhole(refs) {
                throw GatewayFailure(.serviceUnavailable, "the tracker, whose registry prepares for this node, did not take the prepare (\(refusal)); try again")
            }
        }
        let objects = refs.map(\.key.id)
        answer.append(("queued", .int(objects.count)))
        if let job { answer.append(("job", .object(Self.fields(job)))) }
        if let jobs = node.link.flatMap({ Self.jobsURL(ofTracker: $0.configuration.url) }) { answer.append(("jobs", .string(jobs))) }
        answer.append(("objects", .array(objects.map { .string($0) })))
        return JSONBody.response(status: .accepted, answer)
    }

    /// Whether `proxy` is a playlist or an MPD: by its extension, else by what the origin
    /// answers, as for players (SPEC section 1: a path's extension is only a hint). Kept as an
    /// object, a manifest would be served as it is, unrewritten and, for a live one, frozen.
    /// At a media object's path (`list.ts`, as some sites disguise playlists) its bytes alone
    /// tell, since some origins give segments a playlist's content type.
    func manifestFormat(_ proxy: ProxyURL) async throws(GatewayFailure) -> ManifestFormat? {
        guard proxy.virtualHost == .hls, !proxy.isKey else { return nil }
        let path = proxy.origin.path.lowercased()
        if let format = ManifestFormat.detect(body: [UInt8](), path: path) { return format }
        // An object ready already is one, and so is one a job is hashing: no need to ask.
        let key = Self.objectKey(proxy)
        if node.registry.ready(key) != nil { return nil }
        if let job = node.prepareQueue.job(of: key), !job.state.isFinished, job.bytesDone > 0 { return nil }  // its origin sent media
        let answer: OriginAnswer
        do { answer = try await origin.fetch(OriginFetch(url: proxy.origin.string, range: "bytes=0-4095")) } catch { throw error.failure }
        guard answer.status == 200 || answer.status == 206 else { return nil }  // the object's preparation reports it
        let first: [UInt8]
        do { first = try await ChunkIterator(answer.body).next() ?? [] } catch { return nil }
        return ManifestFormat.detect(body: first, contentType: Self.hasMediaExtension(path) ? nil : answer.header("content-type"))
    }

    /// `POST /jobs/status` with `{"ids": [object id, ...]}` (the `objects` of a `/prepare`
    /// answer, `maxStatusIDs` at most): how many of them are in each job state. `done` is a
    /// done job's or a job-less object's whose checksums are ready (its job may have left the
    /// list long ago); a done job's whose checksums were dropped since counts as `queued` (a
    /// prepare starts it over). An object without a job or checksums is `unknown`.
    /// `queueRunning` is how many jobs of any stream run now (those queued ahead of these).
    func jobsStatus(_ request: Request) async throws(GatewayFailure) -> Response {
        let data: ByteBuffer
        do { data = try await request.body.collect(upTo: Self.maxStatusBody) } catch {
            throw GatewayFailure(.contentTooLarge, "body larger than \(Self.maxStatusBody) bytes")
        }
        guard let json = try? JSONSerialization.jsonObject(with: Data(data.readableBytesView)) as? [String: Any], let ids = json["ids"] as? [String],
            ids.count <= Self.maxStatusIDs, ids.allSatisfy(ObjectKey.isID)
        else {
            throw GatewayFailure(.badRequest, "body must be {\"ids\": [object id, ...]}, \(Self.maxStatusIDs) at most")
        }
        let states = node.prepareQueue.states(ofObjects: ids)
        let ready = node.registry.readyIDs(ids)
        // A finished job may have left the list (the newest 1,000 are kept): the registry says.
        let failed = states.contains(nil) ? node.registry.failedIDs(ids) : []
        var counts: [String: Int] = [:]
        for (id, state) in zip(ids, states) {
            let name: String
            switch state {
            case .done?: name = ready.contains(id) ? "done" : "queued"
            case let other?: name = other.rawValue
            case nil: name = ready.contains(id) ? "done" : failed.contains(id) ? "failed" : "unknown"
            }
            counts[name, default: 0] += 1
        }
        let names = ["queued", "running", "paused", "done", "failed", "cancelled", "unknown"]
        return JSONBody.response(names.map { ($0, .int(counts[$0] ?? 0)) } + [("queueRunning", .int(node.prepareQueue.runningCount))])
    }

    /// The most ids one `/jobs/status` takes.
    static let maxStatusIDs = 50_000
    /// The largest `/jobs/status` body: room for `maxStatusIDs` ids, however the JSON is spaced.
    static let maxStatusBody = maxStatusIDs * 128 + 4096

    /// The tracker's `/jobs`, on the host and port of its signalling URL
    /// (`ws://HOST:PORT/swarm/v1/ws`): where the objects it prepares for this node are listed.
    static func jobsURL(ofTracker url: String) -> String? {
        guard var parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(), ["ws", "wss"].contains(scheme) else { return nil }
        parts.scheme = scheme == "wss" ? "https" : "http"
        parts.path = "/jobs"
        parts.query = nil
        parts.fragment = nil
        return parts.string
    }

    /// A manifest to prepare (`what`, for errors): the origin's answer, its whole body, and
    /// the URL it came from after redirects.
    func fetchManifest(_ proxy: ProxyURL, _ what: String) async throws(GatewayFailure) -> (OriginAnswer, [UInt8], OriginURL) {
        let answer: OriginAnswer
        do { answer = try await origin.fetch(OriginFetch(url: proxy.origin.string)) } catch { throw error.failure }
        guard answer.status == 200 else { throw GatewayFailure(.badGateway, "origin answered \(answer.status) for \(what)") }
        let body = try await collectManifest(answer)
        return (answer, body, (try? OriginURL(answer.effectiveURL)) ?? proxy.origin)
    }

    /// Fetches and rewrites an HLS playlist for the objects it lists; a master's variant and
    /// rendition playlists are fetched in turn.
    func preparePlaylist(_ proxy: ProxyURL, depth: Int) async throws(GatewayFailure) -> [ObjectRef] {
        let (_, body, effective) = try await fetchManifest(proxy, "the playlist")
        let options = try hlsOptions(proxy, collectReferences: true)
        let result: HLSRewrite
        do { result = try HLSRewriter(playlistURL: effective, options: options).rewrite(body) } catch {
            throw GatewayFailure(.badGateway, "the playlist cannot be read: \(error)")
        }
        if result.kind == .master {
            guard depth == 0 else { return [] }
            // Its playlists import its variables, as a player's would.
            let carried = PlaylistVariables.encode(result.variables)
            var total: [ObjectRef] = []
            var seen = Set<String>()
            for ref in result.references where [.variant, .rendition, .iFrameVariant].contains(ref.role) {
                let url = configuration.inheritQuery.applied(to: ref.origin, parentQuery: proxy.origin.query)
                guard seen.insert(url.string).inserted else { continue }
                total += try await preparePlaylist(ProxyURL(virtualHost: .hls, origin: url, xresid: proxy.xresid, variables: carried), depth: 1)
            }
            return total
        }
        let objects = mediaObjects(result.references, xresid: proxy.xresid, playlistQuery: proxy.origin.query)
        // With a tracker, its registry prepares them (and seeds the swarm); else this node's.
        return objects.map { ObjectRef(key: $0.key, url: $0.url, duration: $0.duration) }
    }

    /// Fetches and rewrites an MPD for the segments of all its Representations (each
    /// initialization first); a dynamic MPD's as they stand now, at the origin's live edge.
    func prepareMPD(_ proxy: ProxyURL) async throws(GatewayFailure) -> [ObjectRef] {
        let (answer, body, effective) = try await fetchManifest(proxy, "the MPD")
        let now = answer.header("date").flatMap { HTTPDate.seconds($0) } ?? Date().timeIntervalSince1970
        let rewrite: DASHRewrite
        do { rewrite = try rewriteDASH(body, url: effective, xresid: proxy.xresid, collectSegments: true, now: now) } catch {
            throw GatewayFailure(.badGateway, "the MPD cannot be read: \(error)")
        }
        return rewrite.segments.flatMap { list in
            let items = list.segments.lazy.compactMap { s in (try? OriginURL(s.url)).map { (origin: $0, duration: s.duration) } }
            return listedObjects(items, xresid: proxy.xresid, listQuery: proxy.origin.query).map { ObjectRef(key: $0.key, url: $0.url, duration: $0.duration) }
        }
    }

    /// A proxy URL for `url`: this gateway's proxy URL as it stands, or an origin URL under
    /// `xresid` (default: derived from its host and path).
    /// The path of an absolute URL (from its first `/` after the authority), or the URL itself
    /// when it has no scheme.
    static func urlPath(_ url: String) -> Substring {
        guard let scheme = url.range(of: "://") else { return url[...] }
        return url[scheme.upperBound...].firstIndex(of: "/").map { url[$0...] } ?? ""
    }

    static func proxyForPrepare(_ url: String, xresid: String?, publicPath: Substring = "") throws(GatewayFailure) -> ProxyURL {
        // A proxy URL's path starts with its VHOST (`http://gateway/hls.vod.p2p.com/…`, or the
        // path alone), after the path of the gateway's public URL when it has one (a manifest's
        // URLs under `--public-url https://edge/p2p`); an origin URL may have one further on
        // (`…/mirror/hls.vod.p2p.com/a.ts`), and is that origin's object, not another host's.
        let vhosts = ["/hls.vod.p2p.com/", "/xdfs.p2p.com/"]
        var path = urlPath(url)
        let prefix = publicPath.hasSuffix("/") ? publicPath.dropLast() : publicPath
        if !prefix.isEmpty, path.hasPrefix(prefix), vhosts.contains(where: { path.dropFirst(prefix.count).hasPrefix($0) }) {
            path = path.dropFirst(prefix.count)
        }
        if vhosts.contains(where: { path.hasPrefix($0) }) {
            var proxy: ProxyURL
            do { proxy = try ProxyURL(requestTarget: String(path)) } catch {
                throw GatewayFailure(.badRequest, "url: \(error.message)")
            }
            // A key is never kept or given to a peer (SPEC section 1): not prepared either.
            if proxy.isKey { throw GatewayFailure(.badRequest, "url: a key (xkey=1) is never prepared: keys are not kept or shared") }
            // An xresid given beside a proxy URL without one is its stream (it was dropped, and
            // the objects prepared under an id no player asks for); one that differs from the
            // URL's own is refused.
            if let xresid {
                let wanted: XResID
                do { wanted = try XResID(xresid) } catch { throw GatewayFailure(.badRequest, "xresid: \(error.message)") }
                if proxy.xresid.value == XResID(derivedFrom: proxy.origin).value {
                    proxy.xresid = wanted
                } else if proxy.xresid.value != wanted.value {
                    throw GatewayFailure(.badRequest, "xresid \(xresid) differs from the url's own (\(proxy.xresid.value))")
                }
            }
            return proxy
        }
        let proxy: ProxyURL
        do {
            let origin = try OriginURL(url)
            let id = try xresid.map { s throws(ManifestError) in try XResID(s) } ?? XResID(derivedFrom: origin)
            proxy = ProxyURL(virtualHost: .hls, origin: origin, xresid: id)
        } catch {
            throw GatewayFailure(.badRequest, "url: \(error.message)")
        }
        // As a proxy URL's would be (a port past 65535 is the caller's error, not the origin's).
        guard ProxyURL.isValidAuthority(proxy.origin.authority) else {
            throw GatewayFailure(.badRequest, "url: origin host is not valid: \(proxy.origin.authority)")
        }
        return proxy
    }
}
