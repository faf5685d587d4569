import Foundation
import Logging
import Origin
import PieceStore
import Synchronization

/// Origins that ignore ranges: the whole body read once for every piece of an object.
extension SwarmNode {
    // MARK: origins that ignore ranges

    /// Objects up to this length are read to their end when their origin sends the whole
    /// body for a piece; a larger one only up to `wholeReadAhead` bytes past the last piece a
    /// player waits for.
    static let wholeReadLimit: Int64 = 64 << 20
    static let wholeReadAhead = 16 << 20
    /// How long a read waits for its players before it ends: under the time origins give a
    /// client that reads nothing (nginx's `send_timeout` is 60 s), so that they do not cut it.
    static let wholeReadPause: Duration = .seconds(20)
    /// Reads waiting at once, at most: each holds one of its host's connections (8), which
    /// players' playlists and pieces need; past it, a read that would wait ends.
    static let maxPausedReads = 2

    /// A player read piece `index` of `key` from the store (not a peer: another node's asks
    /// say nothing of this node's players): a body being read whole for it goes on ahead of
    /// the player.
    public func served(_ key: ObjectKey, _ index: Int, checksums: PieceChecksums) {
        runningRead(key, checksums)?.want(index)
    }

    /// The whole-body read of `key` under way for copy `checksums`, if one is (the copies are
    /// compared by their digests: one array, one buffer, as a rule — no hash per call).
    func runningRead(_ key: ObjectKey, _ checksums: PieceChecksums) -> WholeBodyRead? {
        wholeReads.withLock { reads in reads[key.id].flatMap { $0.checksums == checksums ? $0.read : nil } }
    }

    /// The scheme and authority of `url` (`http://host:port`).
    static func site(of url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        return String(url[..<(rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex)])
    }

    /// The whole-body read of `key`'s copy under way, else a new one for piece `index`
    /// (`mine`: the caller's to start, or to end).
    func wholeRead(_ key: ObjectKey, _ index: Int, _ checksums: PieceChecksums) -> (read: WholeBodyRead, mine: Bool) {
        wholeReads.withLock { reads in
            if let running = reads[key.id], running.checksums == checksums { return (running.read, false) }
            // Another copy's read, if any, goes on for its own fetches; this copy's takes its place.
            let read = WholeBodyRead(for: index)
            reads[key.id] = (read, checksums)
            return (read, true)
        }
    }

    /// Ends `read` with `outcome` for the fetches waiting on it, and forgets it.
    func endWholeRead(_ read: WholeBodyRead, _ key: ObjectKey, _ outcome: WholeBodyRead.Outcome, error: OriginError? = nil) {
        _ = wholeReads.withLock { reads in reads[key.id]?.read === read ? reads.removeValue(forKey: key.id) : nil }
        read.finish(outcome, error: error)
    }

    /// The origin answered piece `index`'s range with its whole body (it ignores ranges): the
    /// body is read once for the object, in the background, each piece verified and kept as
    /// it passes, and this fetch and the object's others meanwhile take their pieces from it.
    /// `probe`: the read this fetch began before asking; else a body already being read for
    /// the object is joined (this one is dropped).
    func wholeBody(_ response: OriginResponse, _ key: ObjectKey, _ index: Int, checksums: PieceChecksums, url: String, again: Bool, probe: WholeBodyRead?) async throws(PieceFailure) -> [UInt8] {
        let (read, mine) = probe.map { ($0, true) } ?? wholeRead(key, index, checksums)
        if mine {
            logger.info("the origin sent the whole object for a piece's range; reading it once for every piece", metadata: ["object": "\(key)", "piece": "\(index)"])
            Task { await self.readWhole(read, response.body, key, checksums: checksums, url: url) }
        }
        if let got = await fromWholeRead(read, key, index, checksums: checksums) { return try got.get() }
        guard mine else {
            // The read passed the piece and the store did not keep it (full), or stopped short
            // of it: this fetch's own body has it.
            let bytes: [UInt8]
            do { bytes = try await Self.readPiece(response, index, checksums.layout) } catch { throw .origin(error) }
            guard bytes.withUnsafeBytes({ checksums.matches(index, $0) }) else {
                onBadPiece()
                throw originDiffers(key, index, checksums, url: url, "piece \(index) of \(key) from the origin does not match its checksum")
            }
            fetched.note(key, index, from: .origin, bytes: bytes.count)
            keep(key, checksums, index, bytes)
            return bytes
        }
        if let error = read.error, error.code != .connection || again { throw .origin(error) }
        guard !again else { throw .origin(OriginError(.connection, "piece \(index) of \(key) was not in the origin's body read for it")) }
        return try await fetchPiece(key, index, checksums: checksums, url: url, again: true)
    }

    /// Piece `index` from `read` (or the store, when the read passed it before it was asked
    /// for); nil: neither had it.
    func fromWholeRead(_ read: WholeBodyRead, _ key: ObjectKey, _ index: Int, checksums: PieceChecksums) async -> Result<[UInt8], PieceFailure>? {
        switch await read.piece(index) {
        case .piece(let bytes): return .success(bytes)
        case .failed(let failure): return .failure(failure)
        case .missed: return heldPiece(key, index, checksums: checksums).map { .success($0) }
        }
    }

    /// Reads `body`, the whole object from its first byte, into verified pieces: each kept
    /// and handed to the fetches waiting for it (or noted as the origin's, ahead of players).
    /// A piece that fails its check, a body shorter or longer than the prepared copy: the
    /// origin's copy differs (`originDiffers`, once for the read).
    private func readWhole(_ read: WholeBodyRead, _ body: OriginBody, _ key: ObjectKey, checksums: PieceChecksums, url: String) async {
        let layout = checksums.layout
        let wholeObject = layout.length <= Self.wholeReadLimit
        var chunks = body.makeAsyncIterator()
        var index = 0
        var piece: [UInt8] = []
        piece.reserveCapacity(layout.size(of: 0))
        var outcome = WholeBodyRead.Outcome.missed
        var ended: OriginError?
        read.start(wholeObject: wholeObject, ahead: Self.wholeReadAhead / max(1, layout.pieceSize))
        reading: do {
            while index < layout.count {
                // No player near this piece yet: the body waits (its transfer paused) for
                // one to come closer, for a while (a slow player's store hits move it on).
                if !read.reads(index) {
                    guard pausedReads.add(1, ordering: .relaxed).newValue <= Self.maxPausedReads else {
                        pausedReads.subtract(1, ordering: .relaxed)
                        break reading
                    }
                    let wanted = await read.demand(index, within: Self.wholeReadPause)
                    pausedReads.subtract(1, ordering: .relaxed)
                    guard wanted else { break reading }
                }
                guard let chunk = try await chunks.next() else {
                    outcome = .failed(originDiffers(key, index, checksums, url: url, "the origin's copy of \(key) is shorter than the prepared one"))
                    break reading
                }
                var rest = chunk[...]
                while !rest.isEmpty {
                    guard index < layout.count else {
                        outcome = .failed(originDiffers(key, index - 1, checksums, url: url, "the origin's copy of \(key) is larger than the prepared one"))
                        break reading
                    }
                    let take = min(rest.count, layout.size(of: index) - piece.count)
                    piece += rest.prefix(take)
                    rest = rest.dropFirst(take)
                    guard piece.count == layout.size(of: index) else { continue }
                    guard piece.withUnsafeBytes({ checksums.matches(index, $0) }) else {
                        onBadPiece()
                        outcome = .failed(originDiffers(key, index, checksums, url: url, "piece \(index) of \(key) from the origin does not match its checksum"))
                        break reading
                    }
                    // Kept before it is handed on: a fetch that comes once the read passed
                    // it finds it in the store.
                    if !store.has(key, piece: index) {
                        fetched.note(key, index, from: .origin, bytes: piece.count)
                        keep(key, checksums, index, piece)
                    }
                    read.deliver(index, piece)
                    index += 1
                    piece.removeAll(keepingCapacity: true)
                }
            }
            // Every piece read: a byte more is a copy longer than the prepared one.
            if index == layout.count, let more = try await chunks.next(), !more.isEmpty {
                outcome = .failed(originDiffers(key, index - 1, checksums, url: url, "the origin's copy of \(key) is larger than the prepared one"))
            }
        } catch where error.code == .tooLarge {
            outcome = .failed(originDiffers(key, index, checksums, url: url, "the origin's copy of \(key) is larger than the prepared one"))
        } catch {
            ended = error
        }
        endWholeRead(read, key, outcome, error: ended)
    }
}
