import Foundation
import Logging
import Origin
import PieceStore
import Synchronization

/// Pieces from the origin by range, verified, kept, and where they came from noted.
extension SwarmNode {
    func keep(_ key: ObjectKey, _ checksums: PieceChecksums, _ index: Int, _ bytes: [UInt8]) {
        // Not against another copy the registry holds now: a fetch begun against a copy
        // dropped since (the origin's changed) still hands its response the piece it verified,
        // but must not store it over the new copy (one of another length wiped the new copy's
        // pieces). With no copy ready it is kept: a node's entry is dropped for revalidation
        // (`revalidateIfDue`) while its players are still served with it.
        if let ready = registry.ready(key)?.checksums,
            ready.layout != checksums.layout || ready.digests[index] != checksums.digests[index]
        {
            return
        }
        do {
            try store.store(key, layout: checksums.layout, piece: index, bytes: bytes)
        } catch where error.code != .full {  // a full disk: the store logs it
            logger.warning("piece not kept", metadata: ["object": "\(key)", "error": "\(error)"])
        } catch {}
    }

    /// Piece `index` from the origin by range. A piece that does not verify means the origin's
    /// copy changed: the object's checksums are dropped (it is prepared again) and this throws.
    /// An origin that answers the range with its whole body has that body read once for the
    /// object (`wholeBody`).
    func fetchPiece(_ key: ObjectKey, _ index: Int, checksums: PieceChecksums, url: String, again: Bool = false) async throws(PieceFailure) -> [UInt8] {
        let site = Self.site(of: url)
        var probe: WholeBodyRead?
        if wholeOrigins.withLock({ $0.contains(site) }) {
            // Seen to ignore ranges: the object's first piece request goes alone, and the
            // others wait to see whether its answer is the whole body (they ask for their own
            // pieces if it is not).
            let (read, mine) = wholeRead(key, index, checksums)
            if mine {
                probe = read
            } else if let got = await fromWholeRead(read, key, index, checksums: checksums) {
                return try got.get()
            }
        }
        // The waiters on a probe that fails: the origin's copy differs for them too; else
        // (a 206, a transfer error, another status) they ask for their own pieces.
        func endProbe(_ outcome: WholeBodyRead.Outcome) {
            if let probe { endWholeRead(probe, key, outcome) }
        }
        let response: OriginResponse
        do {
            response = try await origin.fetch(Self.pieceRequest(url, index, checksums.layout))
        } catch where error.code == .tooLarge {
            // An origin that ignores ranges and sends a copy larger than the one prepared.
            let failure = originDiffers(key, index, checksums, url: url, "the origin's copy of \(key) is larger than the prepared one")
            endProbe(.failed(failure))
            throw failure
        } catch {
            endProbe(.missed)
            throw .origin(error)
        }
        switch response.status {
        case 206:
            endProbe(.missed)
            if probe != nil { _ = wholeOrigins.withLock { $0.remove(site) } }
        case 200:
            wholeOrigins.withLock { seen in
                if seen.count >= 4096 { seen.removeAll() }
                seen.insert(site)
            }
            return try await wholeBody(response, key, index, checksums: checksums, url: url, again: again, probe: probe)
        case 416:
            let failure = originDiffers(key, index, checksums, url: url, "the origin's copy of \(key) is shorter than piece \(index) (416)")
            endProbe(.failed(failure))
            throw failure
        default:
            endProbe(.missed)
            throw .originStatus(response.status, "origin answered \(response.status) for piece \(index) of \(key)")
        }
        let bytes: [UInt8]
        do {
            // The piece's range within its time limit (a 206 only: a 200's body is read whole
            // for the object, paused for its players, as long as they play).
            bytes = try await Self.collect(response.body, upTo: checksums.layout.size(of: index), within: Self.pieceFetchLimit(idle: origin.configuration.idleTimeout))
        } catch where (error.code == .connection || error.code == .timeout) && !again {
            // The connection broke mid-body (the client retries only before the head), or
            // trickled past the piece's time limit: a piece is a small range, asked once more
            // on a new connection, so that a player's response already under way is not cut
            // short for one reset or one stalled connection (and the players who joined the
            // fetch are not held by it without end: a byte every 9 s kept the idle timer going).
            logger.notice("piece from the origin cut short; asking again", metadata: ["object": "\(key)", "piece": "\(index)", "error": "\(error)"])
            return try await fetchPiece(key, index, checksums: checksums, url: url, again: true)
        } catch {
            throw .origin(error)
        }
        let verified = bytes.withUnsafeBytes { checksums.matches(index, $0) }
        guard verified else {
            onBadPiece()
            throw originDiffers(key, index, checksums, url: url, "piece \(index) of \(key) from the origin does not match its checksum")
        }
        fetched.note(key, index, from: .origin, bytes: bytes.count)
        keep(key, checksums, index, bytes)
        return bytes
    }

    /// The origin request for piece `index`: its range, no more than the prepared length.
    static func pieceRequest(_ url: String, _ index: Int, _ layout: PieceLayout) -> OriginRequest {
        let first = layout.offset(of: index)
        return OriginRequest(url: url, range: .closed(first: first, last: first + Int64(layout.size(of: index)) - 1), maxBodySize: Int64(layout.length))
    }

    /// How long one piece's body may take to come from the origin: three idle timeouts (30 s
    /// by default: a 256 KiB piece at under 9 kB/s), then it is asked again once. A player that
    /// gives up on a segment asks again, and its retry joins this fetch.
    static func pieceFetchLimit(idle: Duration) -> Duration { idle * 3 }

    /// `body` collected (`upTo` bytes at most) within `limit`, else `.timeout` (the transfer is
    /// abandoned).
    static func collect(_ body: OriginBody, upTo size: Int, within limit: Duration) async throws(OriginError) -> [UInt8] {
        let first = await cancelling(after: limit) { () async -> Result<[UInt8], OriginError> in
            do throws(OriginError) { return .success(try await body.collect(upTo: size)) } catch { return .failure(error) }
        }
        guard let first else { throw OriginError(.timeout, "the piece's body took longer than \(limit)") }
        return try first.get()
    }

    /// What `work` returns, or nil once `limit` has passed first; the work is cancelled then
    /// (unlike `value(within:)`, whose work goes on for whoever else wants its answer).
    public static func cancelling<T: Sendable>(after limit: Duration, _ work: @escaping @Sendable () async -> T) async -> T? {
        await withTaskGroup(of: T?.self) { group in
            group.addTask { await work() }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// Piece `index` from an origin's 206 or 200 answer (an origin without ranges: read up to
    /// the piece, what comes before it dropped). Shorter when the body is.
    static func readPiece(_ response: OriginResponse, _ index: Int, _ layout: PieceLayout) async throws(OriginError) -> [UInt8] {
        let first = layout.offset(of: index)
        let size = layout.size(of: index)
        if response.status == 206 { return try await response.body.collect(upTo: size) }
        var bytes: [UInt8] = []
        var skipped: Int64 = 0
        var chunks = response.body.makeAsyncIterator()
        while bytes.count < size, let chunk = try await chunks.next() {
            var c = chunk[...]
            if skipped < first {
                let n = Int(min(first - skipped, Int64(c.count)))
                skipped += Int64(n)
                c = c.dropFirst(n)
            }
            bytes += c.prefix(size - bytes.count)
        }
        return bytes
    }
}
