import Foundation
import Logging
import Origin
import PieceStore

/// Runs one prepare job: fetches the object from the origin (resuming with `Range` +
/// `If-Range` when the job has a validator), hashes it piece by piece, and keeps each piece
/// in the piece store — so the bytes the registry paid for are the first copy served.
struct Preparer: Sendable {
    let origin: OriginClient
    let store: PieceStore
    let logger: Logger

    struct Outcome: Sendable {
        var checksums: PieceChecksums
        var etag: String?
        var lastModified: String?
        var contentType: String?
    }

    /// Why a job stopped short.
    enum Failure: Error, CustomStringConvertible {
        /// Not worth retrying now: the origin answered 4xx, sent no length, or is too large.
        case permanent(String)
        /// A connection or 5xx failure after the client's retries.
        case transient(String)

        var description: String {
            switch self {
            case .permanent(let m), .transient(let m): m
            }
        }
    }

    /// Prepares `job`, calling `progress` after every piece (the job as it stands, to persist).
    func run(_ start: PrepareJob, progress: @Sendable (PrepareJob) -> Void) async throws(Failure) -> Outcome {
        var job = start
        for _ in 0..<3 {
            if job.bytesDone > 0 && job.validator == nil { job.restart() }
            var request = OriginRequest(url: job.url)
            if job.bytesDone > 0, let validator = job.validator {
                request.range = .from(first: job.bytesDone)
                request.headers = [("If-Range", validator)]
            }
            let response: OriginResponse
            do {
                response = try await origin.fetch(request)
            } catch {
                throw error.code == .tooLarge || error.code == .forbiddenAddress
                    ? .permanent(error.description) : .transient(error.description)
            }
            let validator = Self.validator(response)
            switch response.status {
            case 206 where job.bytesDone > 0:
                // Resumed: the rest of the same version, or (a server that ignores If-Range
                // but changed the ETag) a different one, which starts over.
                guard let range = Self.contentRange(response), range.first == job.bytesDone, range.total == job.length,
                    validator == job.validator
                else {
                    job.restart()
                    progress(job)
                    continue
                }
            case 200:
                if job.bytesDone > 0 {
                    logger.info("origin sent the whole object on resume (new version or no range); starting over",
                                metadata: ["object": "\(job.key)"])
                }
                job.restart()
                guard let length = response.header("Content-Length").flatMap({ Int64($0) }) else {
                    throw .permanent("origin sent no Content-Length for \(job.url)")
                }
                job.length = length
                job.validator = validator
            case 500...:
                throw .transient("origin answered \(response.status)")
            default:
                throw .permanent("origin answered \(response.status)")
            }
            try await hash(response.body, job: &job, progress: progress)
            let layout = PieceLayout(length: job.length ?? 0, pieceSize: job.pieceSize)
            guard let checksums = PieceChecksums(layout: layout, packed: job.digests) else {
                throw .transient("hashed \(job.digests.count / 32) of \(layout.count) pieces")
            }
            return Outcome(
                checksums: checksums, etag: response.header("ETag"), lastModified: response.header("Last-Modified"),
                contentType: response.header("Content-Type"))
        }
        throw .transient("the origin's object kept changing while it was prepared")
    }

    /// Reads the body from `job.bytesDone` on, hashing and storing each whole piece.
    private func hash(_ body: OriginBody, job: inout PrepareJob, progress: @Sendable (PrepareJob) -> Void) async throws(Failure) {
        let length = job.length ?? 0
        let layout = PieceLayout(length: length, pieceSize: job.pieceSize)
        var piece: [UInt8] = []
        piece.reserveCapacity(job.pieceSize)
        var iterator = body.makeAsyncIterator()
        while job.bytesDone < length {
            let chunk: [UInt8]?
            do { chunk = try await iterator.next() } catch { throw .transient("origin failed mid-body: \(error)") }
            guard var rest = chunk?[...] else { throw .transient("origin ended the body at \(job.bytesDone + Int64(piece.count)) of \(length) bytes") }
            while !rest.isEmpty && job.bytesDone < length {
                let i = layout.index(at: job.bytesDone)
                let want = layout.size(of: i) - piece.count
                let take = rest.prefix(want)
                piece += take
                rest = rest.dropFirst(take.count)
                if piece.count == layout.size(of: i) {
                    let digest = piece.withUnsafeBytes { SHA256.hash($0) }
                    do {
                        try store.store(job.key, layout: layout, piece: i, bytes: piece)
                    } catch {
                        // The checksum does not depend on keeping the copy: note it and go on.
                        logger.warning("prepared piece not kept", metadata: ["object": "\(job.key)", "error": "\(error)"])
                    }
                    job.digests += digest.bytes
                    job.bytesDone += Int64(piece.count)
                    piece.removeAll(keepingCapacity: true)
                    progress(job)
                }
            }
            if Task.isCancelled { throw .transient("cancelled") }
        }
    }

    /// The validator for `If-Range`: a strong ETag, else Last-Modified.
    static func validator(_ r: OriginResponse) -> String? {
        if let etag = r.header("ETag"), !etag.hasPrefix("W/") { return etag }
        return r.header("Last-Modified")
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
