import Foundation
import Logging
import Origin
import PieceStore
import Synchronization

/// An origin copy that changed: its checksums dropped, rechecked, doubted, revalidated.
extension SwarmNode {
    /// The origin sent other bytes for piece `index` of `key` from `url`, a player's URL: its
    /// query may select other bytes under the same path (another variant, or a request made to
    /// replace a good copy for every player), so the registry drops the copy only once the URL
    /// it was prepared from says the origin's copy changed (`recheck`, here or at the
    /// tracker). The player's request fails over to the origin meanwhile.
    func originDiffers(_ key: ObjectKey, _ index: Int, _ checksums: PieceChecksums, url: String, _ why: String) -> PieceFailure {
        let ref = ObjectRef(key: key, url: url)
        if let link {
            // This node's checksums are the tracker's answer, asked again at the next request;
            // the tracker's registry checks the piece from its source and, if the copy changed,
            // prepares it again and has every node that holds it drop it.
            if registry.drop(key, ifCopy: checksums) {
                logger.warning("the origin sent other bytes for a piece; asking the tracker", metadata: ["object": "\(key)", "why": "\(why)"])
                store.remove(key)
            }
            Task { await link.changed(ref, piece: index) }
        } else if let ready = registry.ready(key), ready.checksums == checksums, ready.entry.sourceURL == url {
            return originChanged(key, index, checksums, url: url, why)
        } else {
            Task { await self.recheck(ref, piece: index) }
        }
        return .originChanged(why)
    }

    /// The origin's copy of `key` is no longer the one `checksums` were made from: they and the
    /// pieces held are dropped, and the object is prepared again — unless the registry holds
    /// other checksums by now (a fetch that started before the object was prepared again must
    /// not drop the new copy).
    func originChanged(_ key: ObjectKey, _ index: Int, _ checksums: PieceChecksums, url: String, _ why: String) -> PieceFailure {
        if registry.drop(key, ifCopy: checksums) {
            logger.warning("the origin's copy changed; preparing the object again", metadata: ["object": "\(key)", "why": "\(why)"])
            store.remove(key)
            prepareQueue.enqueue(key, url: url, urgent: true)
            copyDroppedObserver.withLock { $0 }?.call((key, checksums))
        }
        return .originChanged(why)
    }

    /// Tells `observer` each copy this node's registry drops as the origin's changed (a
    /// tracker tells the nodes that hold it).
    public func onCopyDropped(_ observer: @escaping @Sendable (ObjectKey, PieceChecksums) -> Void) {
        copyDroppedObserver.withLock { $0 = Callback { observer($0.0, $0.1) } }
    }

    /// The tracker's registry dropped copy `copy` (a checksums `fingerprint`) of object
    /// `objectID`: if that is the copy held here, its checksums and pieces go too, and the
    /// next request asks the tracker for the new one. Another copy (the new one, already
    /// here) stays.
    func dropCopy(_ objectID: String, copy: String) {
        guard let ready = registry.ready(id: objectID), ready.checksums.fingerprint == copy,
            registry.drop(ready.entry.key, ifCopy: ready.checksums)
        else { return }
        let key = ready.entry.key
        logger.info("the registry dropped the copy held here; dropping it too", metadata: ["object": "\(key)"])
        store.remove(key)
        swarm.withLock { $0.peerLists[objectID] = nil }
    }

    /// A node says the origin's copy of piece `index` of `ref` changed: the piece is fetched
    /// from the origin here, with `If-Match` when the registry has the copy's strong ETag, and
    /// the checksums are dropped (and the object prepared again) only if the origin's copy
    /// really is another one: a 412, or bytes that fail the check without a validator that
    /// says the copy is the same (a URL whose query selects other bytes is not a change).
    /// At most `maxRechecks` at once (more are dropped), once per object per `recheckInterval`.
    /// Returns whether the origin's copy is another one (and was dropped); nil when nothing
    /// was checked (no slot, checked lately, no source URL, the origin could not tell).
    @discardableResult
    public func recheck(_ ref: ObjectRef, piece index: Int) async -> Bool? {
        guard index >= 0, let ready = registry.ready(ref.key), index < ready.checksums.layout.count else { return nil }
        let now = ContinuousClock.now
        enum Turn { case now, wait, no }
        let turn = rechecks.withLock { r -> Turn in
            if r.last.count >= 4096 { r.last = r.last.filter { now - $0.value < Self.recheckInterval } }
            guard r.last.count < 4096, r.last[ref.key.id].map({ now - $0 >= Self.recheckInterval }) ?? true,
                r.waiting.count < Self.maxWaitingRechecks
            else { return .no }
            r.last[ref.key.id] = now
            guard r.running < Self.maxRechecks else { return .wait }
            r.running += 1
            return .now
        }
        switch turn {
        case .no: return nil
        case .wait:
            // A live playlist that started over has all its objects rechecked at once: they
            // wait their turn (they were dropped, and their old copies kept).
            await withCheckedContinuation { c in
                let start = rechecks.withLock { r -> Bool in
                    guard r.running < Self.maxRechecks else { r.waiting.append(c); return false }
                    r.running += 1
                    return true
                }
                if start { c.resume() }
            }
        case .now: break
        }
        defer {
            let next = rechecks.withLock { r -> CheckedContinuation<Void, Never>? in
                guard !r.waiting.isEmpty else { r.running -= 1; return nil }
                return r.waiting.removeFirst()  // its turn: the slot passes on
            }
            next?.resume()
        }
        // From the URL this registry prepared the copy from: a node's URL may carry a query
        // that selects other bytes under the same path (or names a variant with an ETag of its
        // own), and the object would be prepared again from it and served to every node.
        guard let source = ready.entry.sourceURL else {
            logger.info("a node says the origin's copy changed; the registry kept no source URL for it", metadata: ["object": "\(ref.key)"])
            return nil
        }
        let checksums = ready.checksums
        let etag = ready.entry.etag.flatMap { $0.hasPrefix("W/") ? nil : $0 }
        var verdict = await compare(source, index, checksums, ifMatch: etag)
        // A 412 may come from servers behind one name with ETags of their own for the same
        // bytes: the bytes say (every copy would otherwise be prepared again at each check).
        if verdict == .preconditionFailed { verdict = await compare(source, index, checksums, ifMatch: nil) }
        switch verdict {
        case .another?:
            _ = originChanged(ref.key, index, checksums, url: source, "the origin's copy is another one")
            return true
        case .same?: return false
        case .preconditionFailed?, nil: return nil
        }
    }

    enum Comparison { case same, another, preconditionFailed }

    /// Piece `index` of the origin's copy at `source` against `checksums` (with `If-Match` when
    /// the copy has a strong ETag); nil when the origin could not tell.
    private func compare(_ source: String, _ index: Int, _ checksums: PieceChecksums, ifMatch etag: String?) async -> Comparison? {
        var request = Self.pieceRequest(source, index, checksums.layout)
        if let etag { request.headers = [("If-Match", etag)] }
        guard let response = try? await origin.fetch(request) else { return nil }
        // Other bytes (or none: 416) under the same strong ETag: this URL names another variant.
        let anotherCopy = etag == nil || response.header("ETag") != etag
        switch response.status {
        case 412:
            return .preconditionFailed
        case 206, 200:
            // Another length (Content-Range's, or a whole 200's) is another copy, whatever piece 0 holds.
            let total = response.status == 206
                ? response.header("Content-Range")?.split(separator: "/").last.flatMap { Int64($0) }
                : response.header("Content-Length").flatMap { Int64($0) }
            guard let bytes = try? await Self.readPiece(response, index, checksums.layout) else { return nil }
            let differs = !bytes.withUnsafeBytes { checksums.matches(index, $0) } || total.map { $0 != checksums.layout.length } ?? false
            return differs && anotherCopy ? .another : .same
        case 416:
            return anotherCopy ? .another : .same
        default:
            return nil
        }
    }

    /// Rechecks for nodes that said an origin copy changed, at most at once, and waiting.
    static let maxRechecks = 2
    static let maxWaitingRechecks = 256

    /// A live playlist started over (its media sequence went back: the encoder was restarted)
    /// and lists these objects, which may be new ones under the names of old ones: an encoder
    /// writes `seg00000.ts` again. The copies held are not served as they are. A node whose
    /// registry is the swarm's drops them (the tracker tells the nodes that hold them; the
    /// caller queues them again). Another drops its own, says so to the tracker, whose
    /// registry checks its copy against the origin (dropping it if it changed), and doubts
    /// the copy it held (any, if none) for `doubtLifetime`: while the tracker still names it,
    /// players are sent to the origin.
    public func doubt(_ refs: [ObjectRef]) {
        let until = ContinuousClock.now + Self.doubtLifetime
        // The tracker is told of the newest (a long DVR list's thousands would pass its
        // message rate); the others' copies here are dropped and doubted all the same.
        let told = Set(refs.suffix(Self.maxChangedPerDoubt).map(\.key.id))
        for ref in refs {
            let ready = registry.ready(ref.key)
            // Doubted before the drop: a checksum fetch that marks the old copy ready in
            // between finds the doubt (`undoubted`), where it found neither.
            if link != nil {
                doubts.withLock { d in
                    if d.count >= 4096 { d = d.filter { ContinuousClock.now < $0.value.until } }
                    d[ref.key.id] = (ready?.checksums.fingerprint, until)
                }
            }
            if let ready, registry.drop(ref.key, ifCopy: ready.checksums) {
                store.remove(ref.key)
                if link == nil { copyDroppedObserver.withLock { $0 }?.call((ref.key, ready.checksums)) }
            }
            guard let link else { continue }
            swarm.withLock { $0.peerLists[ref.key.id] = nil }
            if told.contains(ref.key.id) { Task { await link.changed(ref, piece: 0) } }
        }
    }

    /// The objects of one `doubt` the tracker is told of, at most.
    static let maxChangedPerDoubt = 32

    /// A copy older than `revalidateAfter` is checked against the origin in the background
    /// while it is served, as a shared HTTP cache revalidates what it keeps: a file replaced
    /// at the origin under its name was served as it was, by every node, for ever (found by
    /// an attack). The registry that prepared it checks it (`recheck`), once per period
    /// whoever asks, and drops it (it is prepared again, and the nodes that hold it drop it)
    /// if the origin's copy is another one. A node of a tracker asks the tracker for the
    /// object's checksums again, in the background (whose registry checks its copy), and keeps
    /// serving its own meanwhile: the same ones are good for another period, others replace
    /// them (the pieces it holds are verified against them), none (the tracker dropped its
    /// copy) drop them. While the tracker is away, silent or slow, it keeps them and asks
    /// again later. (It dropped them at once and asked at the next request: a tracker away or
    /// hung meanwhile sent every later player of the object to the origin.)
    func revalidateIfDue(_ entry: RegistryEntry, url: String) {
        guard let after = revalidateAfter, Date().timeIntervalSince(entry.updated) > Double(after.components.seconds) else { return }
        let link = link
        if let link, !link.isConnected { return }
        let now = ContinuousClock.now
        let go = revalidating.withLock { r -> Bool in
            guard r[entry.key.id].map({ $0 <= now }) ?? true else { return false }
            if r.count >= 4096 { r = r.filter { $0.value > now } }
            r[entry.key.id] = now + .seconds(3600)  // under way
            return true
        }
        guard go else { return }
        let ref = ObjectRef(key: entry.key, url: url)
        let held = entry.checksums
        Task {
            // true: the copy changed (dropped), false: the same, nil: could not tell.
            let outcome: Bool?
            if let link {
                let answer = await trackerChecksums(ref, urgent: false, waitForOrigin: false, link: link)
                switch answer.state {
                case .ready: outcome = answer.checksums != held  // kept anew (`markReady`), or replaced
                case .unavailable: outcome = nil
                default:
                    if let held { _ = registry.drop(ref.key, ifCopy: held) }
                    outcome = true
                }
            } else {
                outcome = await recheck(ref, piece: 0)
                // Found the same: good for another period.
                if outcome == false { registry.update(ref.key) { _ in } }
            }
            // Not checked (no slot, the origin could not tell, the tracker away): again after
            // `recheckInterval`.
            revalidating.withLock { $0[ref.key.id] = outcome == nil ? ContinuousClock.now + Self.recheckInterval : nil }
        }
    }

    /// How long a copy in doubt is not served while the tracker still names it.
    static let doubtLifetime: Duration = .seconds(10)

    /// Whether copy `copy` (a checksums fingerprint) of object `id` is in doubt now.
    func doubted(_ id: String, _ copy: String) -> Bool {
        doubts.withLock { d in
            guard let doubt = d[id] else { return false }
            guard ContinuousClock.now < doubt.until else {
                d[id] = nil
                return false
            }
            return doubt.copy == nil || doubt.copy == copy
        }
    }

    /// How often one object is checked against the origin for a node that says it changed.
    static let recheckInterval: Duration = .seconds(10)
}
