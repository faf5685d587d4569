import Hummingbird
import Manifest
import Origin
import PieceStore
import Swarm

/// Media objects through the piece cache (SPEC sections 1 and 3): a ready object is served
/// from verified pieces (missing ones filled from the origin by range and verified); an object
/// whose checksums are not ready is answered 302 to the origin while it is prepared.
extension GatewayResponder {
    /// The cache and swarm key of a proxied object: never the query.
    static func objectKey(_ proxy: ProxyURL) -> ObjectKey {
        ObjectKey(xresid: proxy.xresid.value, host: proxy.origin.authority.lowercased(), path: proxy.origin.path)
    }

    /// Path extensions that name media objects (segments, init sections, subtitles, whole
    /// files): these go to the cache without asking the origin what they are first.
    static let mediaExtensions: Set<String> = [
        "ts", "m4s", "mp4", "m4v", "m4a", "m4f", "cmfv", "cmfa", "cmft", "fmp4", "aac", "ac3", "ec3", "mp3",
        "vtt", "webvtt", "ttml", "dfxp", "flv", "mkv", "webm", "mov", "jpg", "jpeg", "png", "webp", "bin", "mpg", "mpeg",
    ]

    static func hasMediaExtension(_ path: String) -> Bool {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return false }
        return mediaExtensions.contains(path[path.index(after: dot)...].lowercased())
    }

    /// SPEC's 302: the origin URL with its own query and without the gateway's parameters.
    func checksumNotReady(_ proxy: ProxyURL) -> Response {
        JSONBody.response(
            status: .found,
            [("code", .int(404)), ("msg", .string("checksum not ready")), ("xresid", .string(proxy.xresid.value))],
            headers: [.location: proxy.origin.string])
    }

    /// Serves `proxy` from the piece cache, or 302 while its checksums are not ready. Nil when
    /// `manifestHere` and the registry found a playlist or an MPD at its path: the caller
    /// fetches and rewrites it (what an object is, the origin's answer decides).
    func serveObject(
        _ proxy: ProxyURL, clientRange: String?, conditions: Conditions = Conditions(), method: HTTPRequest.Method,
        manifestHere: Bool = false
    ) async throws(GatewayFailure) -> Response? {
        let key = Self.objectKey(proxy)
        liveRepresentations.requested(key.id)
        sendReadAheadPart(for: key)
        let entry: RegistryEntry
        let checksums: PieceChecksums
        // An object a playlist listed is there: when it is not ready the player goes to the
        // origin at once. Any other waits for the origin's first answer, so that a missing
        // object is the origin's 404 here rather than a redirect to one. A live playlist's
        // newest objects are listed too (they waited for the origin's head, and for a tracker
        // that did not answer, 12 s).
        // (A second past the preparation's own idle timeout: a silent origin's timeout is the
        // answer, a 504, not a wait that ran out at the same moment, a 302 to it.)
        let wait = playOrder.lists(key) || liveQueued.holds(key.id) ? .zero : configuration.originIdleTimeout + .seconds(1)
        // With --await-preparation, a preparation that will end within the peer deadline is
        // waited for: the CDN then sends the object once, and the player gets it from the swarm.
        let readyWithin = configuration.awaitPreparation ? peerDeadline(for: key) : .zero
        let asked = ContinuousClock.now
        let (node, originURL) = (self.node, proxy.origin.string)
        // Only a wait is cut by a stop (a cache hit pays no task of its own).
        let resolution: SwarmNode.Resolution
        if let now = node.resolveNow(key, url: originURL) {
            resolution = now
        } else {
            resolution = await Self.stoppable(cut: .notReady(ChecksumAnswer(state: .unavailable, reason: "the gateway is stopping"))) {
                await node.resolveLater(key, url: originURL, wait: wait, readyWithin: readyWithin)
            }
        }
        switch resolution {
        case .ready(let e, let c):
            (entry, checksums) = (e, c)
        case .notReady(let answer):
            if manifestHere && answer.manifestFormat != nil { return nil }
            // The registry's first answer from the origin tells whether the player is sent
            // there or told why not.
            switch answer.state {
            case .ready, .preparing, .unavailable:
                // A HEAD sends no player to the origin for bytes.
                if method != .head { stats.countFallback(.checksumsNotReady) }
                return checksumNotReady(proxy)
            case .status:
                throw GatewayFailure.originAnswered(answer.status ?? 502)
            case .forbidden where node.link != nil && origin.refusal(of: proxy.origin.string) == nil:
                // The tracker's registry refuses a host this node allows (their allow lists
                // differ): the player goes to the origin, as while an object is prepared, rather
                // than get a 403 that names a list this node's operator sees the host in.
                if trackerRefusals.claim(proxy.origin.authority) {
                    logger.warning(
                        "the tracker refuses an origin this node allows: its players are sent to the origin (see the reason; allow the host at the tracker too)",
                        metadata: ["origin": "\(proxy.origin.authority)", "reason": "\(answer.reason ?? "")"])
                }
                stats.countFallback(.checksumsNotReady)
                return checksumNotReady(proxy)
            case .forbidden: throw GatewayFailure(.forbidden, answer.reason ?? "origin not allowed")
            case .timeout: throw GatewayFailure(.gatewayTimeout, answer.reason ?? "origin timed out")
            case .failed: throw GatewayFailure(.badGateway, answer.reason ?? "preparation failed")
            }
        }
        let layout = checksums.layout
        var headers: HTTPFields = [.acceptRanges: "bytes", .contentType: entry.contentType ?? "application/octet-stream"]
        if let etag = entry.etag { headers[.eTag] = etag }
        if let lastModified = entry.lastModified { headers[.lastModified] = lastModified }
        // A client (or a cache before it) that holds this copy is told so (RFC 9110 13.2.2:
        // before any range).
        if conditions.holdsCopy(etag: entry.etag, lastModified: entry.lastModified) {
            headers[.acceptRanges] = nil
            headers[.contentType] = nil
            return Response(status: .notModified, headers: headers, body: .init())
        }
        // A range asked for under an If-Range that names another copy is not sent: the whole
        // object is (RFC 9110 13.1.5), so a resuming client never splices two copies.
        let honoured = conditions.ifRange.map { Self.ifRangeHolds($0, etag: entry.etag, lastModified: entry.lastModified) } ?? true
        let range = try RangeAnswer(honoured ? clientRange : nil, length: layout.length)
        let (status, first, count) = (range.status, range.first, range.count)
        if let contentRange = range.contentRange { headers[.contentRange] = contentRange }
        headers[.contentLength] = String(count)
        if method == .head || count == 0 {
            return Response(status: status, headers: headers, body: .init())
        }
        let url = proxy.origin.string
        let xresid = proxy.xresid.value
        // Missing pieces after the first start now, from several peers (or origin ranges) at
        // once, so that neither the first piece nor one slow source holds up the rest. A wait
        // for the preparation came out of the same budget (a quarter of it is always left).
        let budget = peerDeadline(for: key)
        let deadline = max(budget - (ContinuousClock.now - asked), budget / 4)
        let firstIndex = layout.index(at: first)
        let lastIndex = layout.index(at: first + count - 1)
        var started: [Int: Task<ByteBuffer, any Error>] = [:]
        if firstIndex < lastIndex && !node.store.has(key, piece: firstIndex) {
            for j in (firstIndex + 1)...min(firstIndex + Self.piecesInFlight - 1, lastIndex) where !node.store.has(key, piece: j) {
                started[j] = Task { try await self.piece(key, j, checksums: checksums, url: url, deadline: deadline) }
            }
        }
        // The first piece before the head goes out: an origin that cannot fill it still gets
        // an error status rather than an aborted 200.
        let firstPiece: ByteBuffer
        do {
            firstPiece = try await piece(key, firstIndex, checksums: checksums, url: url, deadline: deadline)
        } catch {
            switch error {
            case .originChanged:
                // The checksums no longer stand and the object is prepared again: SPEC's 302
                // while it is, so the player gets the origin's new copy.
                stats.countFallback(.originChanged)
                return checksumNotReady(proxy)
            case .originStatus(let code, _):
                throw GatewayFailure.originAnswered(code, " for piece \(firstIndex) of the object")
            case .origin(let e):
                throw GatewayFailure(HTTPResponse.Status(code: e.httpStatusForGateway), "cannot fill piece \(firstIndex) of the object: \(error)")
            }
        }
        // The next segments come from peers meanwhile, once this one has its first piece.
        if configuration.prefetchSegments > 0 && node.link != nil {
            prefetch(playOrder.after(key, count: configuration.prefetchSegments))
        }
        let (start, end) = (first, first + count)
        let startedAhead = started
        let sending = Self.sending  // held while sent: a stop lets it end
        return Response(
            status: status, headers: headers,
            body: ResponseBody(contentLength: Int(count)) { writer in
                defer { withExtendedLifetime(sending) {} }
                var offset = start
                var next: ByteBuffer? = firstPiece
                // Missing pieces ahead of the one being sent, fetched at once.
                var ahead = startedAhead
                func fetchAhead(after index: Int) {
                    guard index < lastIndex else { return }
                    for j in (index + 1)...min(index + Self.piecesInFlight - 1, lastIndex)
                    where ahead[j] == nil && !self.node.store.has(key, piece: j) {
                        ahead[j] = Task { try await self.piece(key, j, checksums: checksums, url: url, deadline: deadline) }
                    }
                }
                // Pieces this node holds go out together, one write; a piece that must be
                // waited for sends what was gathered first. What a write sends counts as
                // delivered once the writer takes the write after it, or the end: it takes one
                // only when the one before has gone to the socket, so the bytes of a player who
                // left are not counted as sent, and the pieces this node fetched for it count
                // as fetched for the next player who gets them.
                var batch: [ByteBuffer] = []
                var batched = 0
                var gathered = Delivery()
                var unsettled = Delivery()
                var writeFailed = false
                func send() async throws {
                    guard !batch.isEmpty else { return }
                    do {
                        try await writer.write(contentsOf: batch)
                    } catch {
                        writeFailed = true
                        self.giveBack(unsettled, key)
                        self.giveBack(gathered, key)
                        throw error
                    }
                    self.settle(unsettled, xresid: xresid)
                    unsettled = gathered
                    gathered = Delivery()
                    batch.removeAll(keepingCapacity: true)
                    batched = 0
                }
                do {
                    while offset < end {
                        let index = layout.index(at: offset)
                        let buffer: ByteBuffer
                        if let n = next {
                            buffer = n
                            next = nil
                        } else if let pending = ahead.removeValue(forKey: index) {
                            try await send()
                            fetchAhead(after: index)
                            buffer = try await pending.value
                        } else if let held = self.heldPiece(key, index, checksums: checksums) {
                            self.node.served(key, index, checksums: checksums)
                            buffer = held
                        } else {
                            try await send()
                            fetchAhead(after: index)
                            buffer = try await self.piece(key, index, checksums: checksums, url: url, deadline: deadline)
                        }
                        let skip = Int(offset - layout.offset(of: index))
                        let take = Int(min(Int64(buffer.readableBytes - skip), end - offset))
                        if batched >= Self.batchBytes { try await send() }
                        batch.append(buffer.getSlice(at: buffer.readerIndex + skip, length: take)!)
                        batched += take
                        gathered.add(take, of: index, fetched: self.node.fetched.take(key, index, bytes: take))
                        offset += Int64(take)
                    }
                    try await send()
                } catch {
                    // A piece the response could not get (the origin failed, or changed): what
                    // the writer took counts, the fetched pieces gathered and not sent go back.
                    if !writeFailed {
                        self.settle(unsettled, xresid: xresid)
                        self.giveBack(gathered, key)
                    }
                    throw error
                }
                do {
                    try await writer.finish(nil)
                } catch {
                    self.giveBack(unsettled, key)
                    throw error
                }
                // The last write counts once the end is taken (what the channel and the kernel
                // then hold counts as sent: watching each channel until it had handed it on
                // cost the cached-object benchmark 8%).
                self.settle(unsettled, xresid: xresid)
            })
    }

    /// The bytes of a write by where they came from, counted once the write is known sent.
    struct Delivery {
        /// Bytes this node held before (counted as `cache`).
        var held = 0
        /// Bytes of pieces this node fetched, counted as where they came from.
        var fetched: [(index: Int, source: SwarmNode.FetchSource, bytes: Int)] = []

        mutating func add(_ bytes: Int, of index: Int, fetched taken: (source: SwarmNode.FetchSource, bytes: Int)?) {
            guard let taken else { held += bytes; return }
            fetched.append((index, taken.source, taken.bytes))
            held += bytes - taken.bytes
        }
    }

    /// Counts a write's bytes as delivered.
    func settle(_ d: Delivery, xresid: String) {
        stats.add(d.held, from: .cache, xresid: xresid)
        for f in d.fetched { stats.add(f.bytes, from: source(of: f.source, xresid: xresid), xresid: xresid) }
    }

    /// Gives the fetched pieces of a write that did not reach the player back to the next one.
    func giveBack(_ d: Delivery, _ key: ObjectKey) {
        for f in d.fetched { node.fetched.giveBack(key, f.index, from: f.source, bytes: f.bytes) }
    }

    /// A request's preconditions on the copy served (RFC 9110 13.1).
    struct Conditions: Sendable {
        var ifRange: String?
        var ifNoneMatch: String?
        var ifModifiedSince: String?

        init(ifRange: String? = nil, ifNoneMatch: String? = nil, ifModifiedSince: String? = nil) {
            self.ifRange = ifRange
            self.ifNoneMatch = ifNoneMatch
            self.ifModifiedSince = ifModifiedSince
        }

        init(_ headers: HTTPFields) {
            self.init(ifRange: headers[.ifRange], ifNoneMatch: headers[.ifNoneMatch], ifModifiedSince: headers[.ifModifiedSince])
        }

        /// Whether the client holds the copy served, so that it is answered 304: an
        /// `If-None-Match` of `*` or naming its ETag (weak comparison), or, without an
        /// `If-None-Match`, an `If-Modified-Since` no earlier than its Last-Modified.
        func holdsCopy(etag: String?, lastModified: String?) -> Bool {
            if let ifNoneMatch {
                let tags = Self.entityTags(ifNoneMatch)
                if tags.contains("*") { return true }
                guard let etag else { return false }
                return tags.contains { Self.opaque($0) == Self.opaque(etag) }
            }
            guard let ifModifiedSince, let lastModified,
                let since = HTTPDate.seconds(ifModifiedSince), let modified = HTTPDate.seconds(lastModified)
            else { return false }
            return modified <= since
        }

        /// The members of an `If-None-Match` list: entity tags (a comma inside the quotes of
        /// one is part of it) or `*`.
        static func entityTags(_ list: String) -> [Substring] {
            HTTPList.members(list)
        }

        /// An entity tag without its weakness indicator (`W/"x"` → `"x"`).
        static func opaque(_ tag: some StringProtocol) -> Substring {
            let t = Substring(tag)
            return t.hasPrefix("W/") ? t.dropFirst(2) : t
        }
    }

    /// Whether an `If-Range` value names the copy served: a strong entity tag equal to its
    /// ETag (strong comparison: a weak tag never matches), or a date equal to its
    /// Last-Modified.
    static func ifRangeHolds(_ value: String, etag: String?, lastModified: String?) -> Bool {
        let v = value.trimmingCharacters(in: .whitespaces)
        if v.hasPrefix("W/") { return false }
        if v.hasPrefix("\"") { return etag.map { !$0.hasPrefix("W/") && $0 == v } ?? false }
        return lastModified == v
    }

    /// The most bytes of held pieces gathered into one write (slices, never copies).
    static let batchBytes = 4 << 20
    /// Missing pieces of one response fetched at once.
    static let piecesInFlight = 4

    /// Piece `index` of `key` if this node holds it, verified: from memory, else read from the
    /// store (SHA-256-checked) and kept in memory. Never goes to the origin.
    func heldPiece(_ key: ObjectKey, _ index: Int, checksums: PieceChecksums) -> ByteBuffer? {
        let digest = checksums.digests[index]
        if let hot = hotPieces.get(key, index, digest: digest) {
            // A use of the stored copy too: the object played most is not the first evicted.
            node.store.touch(key)
            return hot
        }
        let size = checksums.layout.size(of: index)
        var buffer = ByteBufferAllocator().buffer(capacity: size)
        var held = false
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { raw in
            guard let n = node.store.readPiece(key, index, checksums: checksums, into: raw) else { return 0 }
            held = true
            return n
        }
        guard held else { return nil }
        hotPieces.put(key, index, digest: digest, buffer)
        return buffer
    }

    /// How long peers may take over a piece of `key` before the origin is asked: the setting,
    /// else a quarter of the segment's duration (from its playlist), between 0.5 and 3 s —
    /// playback never waits on the swarm for long against the time a segment lasts.
    func peerDeadline(for key: ObjectKey) -> Duration {
        if let fixed = configuration.peerDeadline { return fixed }
        return Self.quarter(of: playOrder.duration(of: key), within: 0.5...3) ?? Self.unknownDurationDeadline
    }

    /// Fetches `refs` from peers in the background, each within its own deadline.
    func prefetch(_ refs: [ObjectRef]) {
        node.prefetch(refs.map { ($0, peerDeadline(for: $0.key)) })
    }

    /// The deadline for objects of unknown duration (DASH, single files, unseen playlists).
    public static let unknownDurationDeadline: Duration = .milliseconds(1500)

    /// Where the bytes of a piece this node fetched count, the first time a player gets it.
    func source(of fetched: SwarmNode.FetchSource, xresid: String) -> TrafficStats.Source {
        switch fetched {
        case .origin: return .cdn
        case .peer(let peer):
            stats.notePeer(peer, xresid: xresid)
            return .p2p
        }
    }

    /// One verified piece: held by this node, else from peers or the origin (where it came
    /// from is settled when it is sent: `FetchedPieces`).
    func piece(_ key: ObjectKey, _ index: Int, checksums: PieceChecksums, url: String, deadline: Duration) async throws(SwarmNode.PieceFailure) -> ByteBuffer {
        if let held = heldPiece(key, index, checksums: checksums) {
            // A player's read of a held piece moves a whole-body read of the object on.
            node.served(key, index, checksums: checksums)
            return held
        }
        let buffer = ByteBuffer(bytes: try await node.obtain(key, index, checksums: checksums, url: url, deadline: deadline))
        hotPieces.put(key, index, digest: checksums.digests[index], buffer)
        return buffer
    }
}
