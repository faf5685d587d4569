import Foundation
import Logging
import Origin
import PieceStore
import Synchronization

/// Asking the holders the tracker names for a piece, within its deadline.
extension SwarmNode {
    // MARK: peers

    /// What asking the peers for a piece came to.
    enum PeerOutcome: Sendable {
        case piece([UInt8])
        /// The store holds it already: a fetch for it ended between the caller's look at the
        /// store and this one (a player's and a prefetch's requests race so), and kept it.
        case held
        /// None sent it verified in time: why (nil: this node is not in a swarm).
        case none(FallbackReason?)
    }

    /// Piece `index` of `key` from peers, shared by every request for it meanwhile (a
    /// player's and a prefetch's alike): the first peer that sends it verified within
    /// `deadline`, kept in the store. A request that joins a fetch under way gets that fetch's
    /// deadline (both are the segment's peer deadline, counted from the earlier start).
    func fromPeers(_ key: ObjectKey, _ index: Int, checksums: PieceChecksums, deadline: Duration) async -> PeerOutcome {
        await peerFlights.run(Self.flightKey(key, index, checksums)) {
            await self.askPeers(key, index, checksums: checksums, deadline: deadline)
        }
    }

    private func askPeers(_ key: ObjectKey, _ index: Int, checksums: PieceChecksums, deadline: Duration) async -> PeerOutcome {
        // A fetch that ended since the caller looked kept the piece before it ended: never
        // take a piece from peers twice.
        if store.has(key, piece: index) { return .held }
        guard let link else { return .none(nil) }
        guard link.isConnected else { return .none(.trackerAway) }
        let started = ContinuousClock.now
        // A tracker slow to name the holders (a want waits up to 2 s) costs the piece its
        // deadline at most; the want goes on, and its answer is kept for the next pieces.
        let peers: [SwarmPeer]
        if let cached = cachedPeers(key) {
            peers = cached
        } else if swarm.withLock({ $0.wantLate.contains(key.id) }) {
            return .none(.deadline)
        } else {
            guard let named = await Self.value(within: deadline, { await self.peerList(key, link: link) }) else {
                swarm.withLock { $0.wantLate.mark(key.id, for: link.configuration.wantTimeout) }
                return .none(.deadline)
            }
            peers = named
        }
        guard !peers.isEmpty else { return .none(.noPeers) }
        let me = link.configuration.peerID.current
        let size = checksums.layout.size(of: index)
        // Pieces of one object spread over its holders. A holder passed over as slow, or
        // one that timed out, makes running out of holders a `deadline` fallback.
        var skippedSlow = false
        for n in 0..<peers.count {
            let peer = peers[(index + n) % peers.count]
            let left = deadline - (ContinuousClock.now - started)
            guard left > .milliseconds(1) else { return .none(.deadline) }
            let (dropped, slow) = swarm.withLock { s in
                (
                    s.dropped.contains(Self.pairKey(key, peer.peerId)),
                    s.slow.contains(Self.pairKey(key, peer.peerId)) || s.slow.contains(Self.silentKey(peer.peerId))
                )
            }
            if dropped { continue }
            if slow {
                skippedSlow = true
                continue
            }
            // `sha`: the piece this node's checksums expect. A holder with another copy of the
            // object (the origin's changed, and one of them has not heard yet) refuses with 409
            // rather than send a piece that would count against it as bad.
            let url = Self.peerPieceURL(peer.url, key.id, index, from: me, token: peer.token, sha: checksums.digests[index].short)
            let request = OriginRequest(url: url, timeouts: .init(connect: min(left, .seconds(1)), idle: left, total: left), maxBodySize: Int64(size))
            var bytes: [UInt8] = []
            var answered = false
            do {
                let response = try await peerClient.fetch(request)
                answered = true
                guard response.status == 200 else { continue }
                bytes = try await response.body.collect(upTo: size)
            } catch {
                switch error.code {
                case .tooLarge:
                    // More bytes than the piece: a bad piece, as an audit finds it (it was
                    // only skipped, and the peer asked again first for the next pieces).
                    bytes = []
                case .timeout:
                    // Not a peer that had only what others left of the deadline.
                    if left >= deadline / 2 {
                        swarm.withLock { s in
                            s.slow.mark(Self.pairKey(key, peer.peerId), for: Self.slowPeerLifetime)
                            if !answered { s.slow.mark(Self.silentKey(peer.peerId), for: Self.slowPeerLifetime) }
                        }
                    }
                    // A connection that never completed took its connect timeout (1 s), not
                    // the deadline: the next holder is asked with what is left (a machine
                    // gone cost the piece a CDN fetch with a live holder listed after it).
                    skippedSlow = true
                    continue
                case .busy:
                    // No connection slot to it freed in time (this node's own requests hold
                    // them): busy, not slow.
                    return .none(.deadline)
                default:
                    continue
                }
            }
            guard bytes.withUnsafeBytes({ checksums.matches(index, $0) }) else {
                onBadPiece()
                logger.warning("a peer sent a bad piece; dropped for this object and reported", metadata: ["peer": "\(peer.peerId)", "object": "\(key)", "piece": "\(index)"])
                swarm.withLock { s in
                    s.dropped.mark(Self.pairKey(key, peer.peerId), for: Self.droppedPeerLifetime)
                    s.peerLists[key.id] = nil
                }
                // Not waited for: the report queues behind the link's other messages, and the
                // piece goes on to the next peer meanwhile.
                Task { await link.report(peer.peerId, object: key.id, piece: index) }
                continue
            }
            fetched.note(key, index, from: .peer(peer.peerId), bytes: bytes.count)
            keep(key, checksums, index, bytes)
            return .piece(bytes)
        }
        return .none(skippedSlow ? .deadline : .peersFailed)
    }

    /// The key of an object and a peer in the node's marks.
    private static func pairKey(_ key: ObjectKey, _ peer: String) -> String { key.id + " " + peer }
    /// The key of a peer that answered nothing, for every object (`SwarmState.slow`).
    private static func silentKey(_ peer: String) -> String { "* " + peer }

    /// The holders of `key` the tracker named within `peerListLifetime`.
    private func cachedPeers(_ key: ObjectKey) -> [SwarmPeer]? {
        swarm.withLock { $0.peerLists[key.id] }.flatMap { ContinuousClock.now - $0.at < Self.peerListLifetime ? $0.peers : nil }
    }

    /// `work`'s value, or nil once `limit` has passed first. The work is not cancelled (a want
    /// shared by the requests for an object goes on, and its answer is kept).
    static func value<T: Sendable>(within limit: Duration, _ work: @escaping @Sendable () async -> T) async -> T? {
        let first = FirstAnswer<T?>()
        return await withCheckedContinuation { (c: CheckedContinuation<T?, Never>) in
            first.wait(c)
            let timer = Task {
                try? await Task.sleep(for: limit)
                first.answer(nil)
            }
            Task {
                let value = await work()
                timer.cancel()
                first.answer(value)
            }
        }
    }

    /// A continuation resumed by the first of several answers; the others are dropped.
    private final class FirstAnswer<T: Sendable>: Sendable {
        private let waiter = Mutex<CheckedContinuation<T, Never>?>(nil)
        func wait(_ c: CheckedContinuation<T, Never>) { waiter.withLock { $0 = c } }
        func answer(_ value: T) {
            waiter.withLock { w in
                defer { w = nil }
                return w
            }?.resume(returning: value)
        }
    }

    /// The holders of `key` the tracker named lately, else asked now (one want at a time per object).
    private func peerList(_ key: ObjectKey, link: TrackerLink) async -> [SwarmPeer] {
        if let cached = cachedPeers(key) { return cached }
        return await wantFlights.run(key.id) {
            let peers = await link.want(key.id)
            return self.keepPeerList(key, peers)
        }
    }

    /// Keeps the holders of `key` the tracker named (less those dropped for it); returns them.
    @discardableResult
    func keepPeerList(_ key: ObjectKey, _ peers: [SwarmPeer]) -> [SwarmPeer] {
        let now = ContinuousClock.now
        return swarm.withLock { s in
            let usable = peers.filter { !s.dropped.contains(Self.pairKey(key, $0.peerId), now: now) }
            s.peerLists[key.id] = (usable, now)
            s.wantLate.clear(key.id)
            if s.peerLists.count > 4096 { s.peerLists = s.peerLists.filter { now - $0.value.at < Self.peerListLifetime } }
            return usable
        }
    }

    /// Where piece `index` of object `objectID` is asked of the peer at `base`, for peer `from`
    /// with the tracker's `token`, expecting the piece whose SHA-256 starts with `sha`.
    public static func peerPieceURL(_ base: String, _ objectID: String, _ index: Int, from: String, token: String, sha: String) -> String {
        "\(base)/peer/v1/\(objectID)/\(index)?from=\(queryEscaped(from))&token=\(queryEscaped(token))&sha=\(sha)"
    }

    static func queryEscaped(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? s
    }
}
