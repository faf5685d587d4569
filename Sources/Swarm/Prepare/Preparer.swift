import Foundation
import Logging
import Manifest
import Origin
import PieceStore

/// How the origin first answered a prepare job: what a player's first request is told.
public enum OriginHead: Sendable, Equatable {
    /// The object is there (200/206): the player is sent to the origin while it is prepared.
    case available
    /// The origin answered this status (4xx, or 5xx after retries).
    case status(Int)
    /// The address policy refused the origin (SPEC section 5).
    case forbidden(String)
    /// The origin did not answer in time.
    case timeout(String)
    /// The origin has the object, but the swarm cannot take it: over the size cap, sent
    /// without a length, or changing while it was prepared. Players go to the origin for it,
    /// as while it is prepared.
    case uncacheable(String)
    /// Anything else: connection failures.
    case failed(String)
    /// The origin answered a playlist or an MPD (a body that starts `#EXTM3U` or `<MPD`) at a
    /// path that looked like a media object's: what it is, is decided by the origin's answer
    /// (SPEC section 1), so the gateway rewrites it.
    case manifest(ManifestFormat)

    /// The origin failed the object (a status, a timeout, a broken connection): an answer
    /// that may not stand for long.
    public var isOriginFailure: Bool {
        switch self {
        case .status, .timeout, .failed: true
        case .available, .forbidden, .uncacheable, .manifest: false
        }
    }
}

/// Runs one prepare job: fetches the object from the origin (resuming with `Range` +
/// `If-Range` when the job has a validator), hashes it piece by piece, and keeps each piece
/// in the piece store — so the bytes the registry paid for are the first copy served.
struct Preparer: Sendable {
    let origin: OriginClient
    let store: PieceStore
    let maxObjectSize: Int64
    let logger: Logger
    /// Told of each chunk of an object's body that comes from its origin.
    var onOriginBytes: @Sendable (ObjectKey, Int) -> Void = { _, _ in }
    /// Told of each piece kept in the store (object, index, bytes).
    var onPieceKept: @Sendable (ObjectKey, Int, Int) -> Void = { _, _, _ in }

    struct Outcome: Sendable {
        var checksums: PieceChecksums
        var etag: String?
        var lastModified: String?
        var contentType: String?
    }

    /// Why a job stopped short.
    struct Failure: Error, CustomStringConvertible {
        var head: OriginHead
        var description: String {
            switch head {
            case .available: "stopped"
            case .status(let s): "origin answered \(s)"
            case .manifest(let format): "origin answered \(format.described), not a media object"
            case .forbidden(let m), .timeout(let m), .uncacheable(let m), .failed(let m): m
            }
        }
    }

    /// Body failures survived per job: each resumes where the last piece ended.
    static let bodyRetries = 4

    /// Prepares `job`. `onHead` hears the origin's first answer; `progress` gets the job after
    /// every piece (to persist).
    func run(
        _ start: PrepareJob, onHead: @Sendable (OriginHead) -> Void, progress: @Sendable (PrepareJob) -> Void
    ) async throws(Failure) -> Outcome {
        var job = start
        var bodyFailures = 0
        var furthest: Int64 = 0
        var restarts = 0
        /// Whether to ask again after the body failed (`bodyRetries` times at most without a
        /// piece gained past the furthest one before), after a pause. Counted per job, an origin
        /// (or a balancer before it) that cuts long transfers every few hundred megabytes failed
        /// every large object after four cuts however far each got. Past the furthest point, not
        /// the last cut's: a run that starts over each time (no validator) reaches about as far
        /// each time, and would be asked again for ever.
        func retried(after error: Failure) async -> Bool {
            if job.bytesDone > furthest {
                bodyFailures = 0
                furthest = job.bytesDone
            }
            bodyFailures += 1
            guard bodyFailures <= Self.bodyRetries, !Task.isCancelled else { return false }
            logger.info("origin failed mid-body; resuming", metadata: ["object": "\(job.key)", "at": "\(job.bytesDone)", "error": "\(error)"])
            try? await Task.sleep(for: .milliseconds(200 * bodyFailures))
            return true
        }
        while true {
            if job.bytesDone > 0 && job.validator == nil { job.restart() }
            var request = OriginRequest(url: job.url, maxBodySize: maxObjectSize)
            if job.bytesDone > 0, let validator = job.validator {
                request.range = .from(first: job.bytesDone)
                request.headers = [("If-Range", validator)]
            }
            let response: OriginResponse
            do {
                response = try await origin.fetch(request)
            } catch {
                let head: OriginHead = switch error.code {
                case .forbiddenAddress: .forbidden(error.description)
                case .timeout, .busy: .timeout(error.description)
                // Its announced length is over the cap (libcurl stops before the body).
                case .tooLarge: .uncacheable(error.description)
                default: .failed(error.description)
                }
                onHead(head)
                throw Failure(head: head)
            }
            let validator = Self.validator(response)
            var body = response.body.makeAsyncIterator()
            // The body's first chunk, when it was read to tell what the object is.
            var first: [UInt8] = []
            if response.status == 200 {
                // A playlist or an MPD is no media object, whatever its path says: told first,
                // before what would keep a media object out of the swarm (a live playlist comes
                // without a length, often marked no-store), and by its bytes alone: origins
                // that label segments with a playlist's content type exist, and a segment taken
                // for a playlist would fail every player. A failure to read them is a body's
                // failure, tried again as one.
                do {
                    first = try await body.next() ?? []
                } catch {
                    let failure = Failure(head: .failed("origin failed mid-body: \(error)"))
                    if await retried(after: failure) { continue }
                    onHead(failure.head)
                    throw failure
                }
                if let format = ManifestFormat.detect(body: first) {
                    onOriginBytes(job.key, first.count)
                    onHead(.manifest(format))
                    throw Failure(head: .manifest(format))
                }
            }
            // Bytes in a content coding (gzip) are not the object's: kept, they would be served
            // without the coding, and no player could decode them.
            if (200..<300).contains(response.status), let coding = Self.contentCoding(response) {
                onHead(.uncacheable("origin sent the object in a content coding (\(coding))"))
                throw Failure(head: .uncacheable("origin sent \(job.url) with Content-Encoding \(coding)"))
            }
            // A shared cache keeps no answer its origin marks for one client only (RFC 9111
            // 3, 5.2.2.5, 5.2.2.7): a per-viewer segment (a forensic watermark) would be
            // served to every viewer of the swarm.
            if (200..<300).contains(response.status), let directive = Self.unshareable(response.headerList("Cache-Control")) {
                onHead(.uncacheable("origin marked the object Cache-Control: \(directive)"))
                throw Failure(head: .uncacheable("origin marked \(job.url) Cache-Control: \(directive)"))
            }
            switch response.status {
            case 206 where job.bytesDone > 0:
                // Resumed: the rest of the same version. Anything else starts over.
                guard let range = Self.contentRange(response), range.first == job.bytesDone, range.total == job.length,
                    validator == job.validator
                else {
                    restarts += 1
                    guard restarts <= 3 else { throw Failure(head: .uncacheable("the origin's object kept changing while it was prepared")) }
                    job.restart()
                    progress(job)
                    continue
                }
            case 200:
                if job.bytesDone > 0 {
                    logger.info("origin sent the whole object on resume (a new version, or no ranges): starting over",
                                metadata: ["object": "\(job.key)"])
                }
                job.restart()
                // From the first byte: pieces the store holds of the object are another copy's
                // (this job's before the origin's copy changed, or a run cancelled or failed
                // before), and the store keeps a piece it holds rather than write it again:
                // they were served against this copy's checksums, failed them (bad pieces) and
                // were fetched again from the origin.
                if store.info(job.key) != nil { store.remove(job.key) }
                guard let length = response.header("Content-Length").flatMap({ Int64($0) }) else {
                    onHead(.uncacheable("origin sent no Content-Length"))
                    throw Failure(head: .uncacheable("origin sent no Content-Length for \(job.url)"))
                }
                guard length <= maxObjectSize else {
                    onHead(.uncacheable("object of \(length) bytes is over the \(maxObjectSize)-byte cap"))
                    throw Failure(head: .uncacheable("object of \(length) bytes is over the \(maxObjectSize)-byte cap"))
                }
                job.length = length
                job.validator = validator
                progress(job)  // the queue learns of the restart (bytes at 0) before the head
            default:
                onHead(.status(response.status))
                throw Failure(head: .status(response.status))
            }
            onHead(.available)
            do {
                try await hash(&body, first: first, job: &job, progress: progress)
            } catch {
                if await retried(after: error) { continue }
                throw error
            }
            let layout = PieceLayout(length: job.length ?? 0, pieceSize: job.pieceSize)
            guard let checksums = PieceChecksums(layout: layout, packed: job.digests) else {
                throw Failure(head: .failed("hashed \(job.digests.count / 32) of \(layout.count) pieces"))
            }
            return Outcome(
                checksums: checksums, etag: response.header("ETag"), lastModified: response.header("Last-Modified"),
                contentType: response.header("Content-Type"))
        }
    }

    /// Reads the body from `job.bytesDone` on (`first`: its first chunk, read already),
    /// hashing and storing each whole piece.
    private func hash(
        _ body: inout OriginBody.AsyncIterator, first: [UInt8], job: inout PrepareJob, progress: @Sendable (PrepareJob) -> Void
    ) async throws(Failure) {
        let length = job.length ?? 0
        let layout = PieceLayout(length: length, pieceSize: job.pieceSize)
        var piece: [UInt8] = []
        piece.reserveCapacity(job.pieceSize)
        var pending: [UInt8]? = first.isEmpty ? nil : first
        while job.bytesDone < length {
            if Task.isCancelled { throw Failure(head: .failed("stopped")) }
            let chunk: [UInt8]?
            if let read = pending {
                chunk = read
                pending = nil
            } else {
                do { chunk = try await body.next() } catch { throw Failure(head: .failed("origin failed mid-body: \(error)")) }
            }
            guard var rest = chunk?[...] else {
                throw Failure(head: .failed("origin ended the body at \(job.bytesDone + Int64(piece.count)) of \(length) bytes"))
            }
            onOriginBytes(job.key, rest.count)
            while !rest.isEmpty && job.bytesDone < length {
                let i = layout.index(at: job.bytesDone)
                let take = rest.prefix(layout.size(of: i) - piece.count)
                piece += take
                rest = rest.dropFirst(take.count)
                if piece.count == layout.size(of: i) {
                    let digest = piece.withUnsafeBytes { SHA256.hash($0) }
                    do {
                        // Noted first: a player reading it from the store at once sees where it came from.
                        onPieceKept(job.key, i, piece.count)
                        try store.store(job.key, layout: layout, piece: i, bytes: piece)
                    } catch where error.code != .full {  // a full disk: the store logs it
                        // The checksum does not depend on keeping the copy: note it and go on.
                        logger.warning("prepared piece not kept", metadata: ["object": "\(job.key)", "error": "\(error)"])
                    } catch {}
                    job.digests += digest.bytes
                    job.bytesDone += Int64(piece.count)
                    piece.removeAll(keepingCapacity: true)
                    progress(job)
                }
            }
        }
    }

    /// The validator for `If-Range`: a strong ETag, else Last-Modified.
    /// The response's content coding, if it names one other than `identity`.
    static func contentCoding(_ response: OriginResponse) -> String? {
        guard let coding = response.header("Content-Encoding")?.trimmingCharacters(in: .whitespaces), !coding.isEmpty,
            coding.lowercased() != "identity"
        else { return nil }
        return coding
    }

    static func validator(_ r: OriginResponse) -> String? {
        if let etag = r.header("ETag"), !etag.hasPrefix("W/") { return etag }
        return r.header("Last-Modified")
    }

    /// The `Cache-Control` directive that keeps an answer out of shared caches: `no-store`, or
    /// `private` without field names (`private="Set-Cookie"` keeps only those fields private).
    static func unshareable(_ cacheControl: String?) -> String? {
        guard let cacheControl else { return nil }
        return HTTPList.members(cacheControl).map { $0.lowercased() }.first { $0 == "no-store" || $0 == "private" }
    }

    /// `Content-Range: bytes FIRST-LAST/TOTAL`.
    static func contentRange(_ r: OriginResponse) -> (first: Int64, total: Int64)? {
        guard let v = r.header("Content-Range"), v.hasPrefix("bytes ") else { return nil }
        let parts = v.dropFirst(6).split(separator: "/")
        guard parts.count == 2, let dash = parts[0].firstIndex(of: "-"), let first = Int64(parts[0][..<dash]),
            let total = Int64(parts[1])
        else { return nil }
        return (first, total)
    }
}
