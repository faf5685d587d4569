import Foundation
import Manifest
import PieceStore

/// One media object as nodes name it to the tracker: its key and the origin URL (with the
/// origin's own query) that the registry prepares it from.
public struct ObjectRef: Codable, Sendable, Hashable {
    public var xresid: String
    public var host: String
    public var path: String
    public var url: String
    /// Seconds of media (a segment's EXTINF), when a playlist gives it: the registry prepares
    /// a playlist's objects a span of media time ahead of its players (`ReadAheadWindow`).
    public var duration: Double?

    public init(key: ObjectKey, url: String, duration: Double? = nil) {
        xresid = key.xresid
        host = key.host
        path = key.path
        self.url = url
        self.duration = duration
    }

    public var key: ObjectKey { ObjectKey(xresid: xresid, host: host, path: path) }
}

/// The registry's answer about one object (SPEC section 3): its checksums once ready, else
/// what the origin's first answer to the preparation said. Travels in `sums` messages.
public struct ChecksumAnswer: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable {
        /// Checksums below: serve the object.
        case ready
        /// Being prepared and the origin has the object: send the player there meanwhile.
        case preparing
        /// The origin answered `status` (4xx, or 5xx after retries).
        case status
        /// The registry may not fetch this origin (`reason`).
        case forbidden
        /// The origin did not answer in time.
        case timeout
        /// Preparation failed (`reason`).
        case failed
        /// No registry answered (tracker away or slow): CDN only.
        case unavailable
    }

    public var state: State
    public var status: Int?
    public var reason: String?
    public var length: Int64?
    public var pieceSize: Int?
    /// Lowercase hex SHA-256 of each piece, in order.
    public var digests: [String]?
    public var etag: String?
    public var lastModified: String?
    public var contentType: String?
    /// The origin answered a playlist or an MPD (`hls`, `dash`) at this media path, with
    /// state `unavailable` (a node that does not know the field sends its player to the
    /// origin): the gateway fetches and rewrites it as one.
    public var manifest: String?

    public init(state: State, status: Int? = nil, reason: String? = nil) {
        self.state = state
        self.status = status
        self.reason = reason
    }

    /// A ready entry's answer.
    public init(ready entry: RegistryEntry, checksums: PieceChecksums) {
        state = .ready
        length = checksums.layout.length
        pieceSize = checksums.layout.pieceSize
        digests = checksums.digests.map(\.description)
        etag = entry.etag
        lastModified = entry.lastModified
        contentType = entry.contentType
    }

    /// The answer for the origin's first answer to a preparation (nil: none yet).
    public init(head: OriginHead?) {
        switch head {
        case .available?, nil: self.init(state: .preparing)
        case .status(let code)?: self.init(state: .status, status: code)
        case .forbidden(let why)?: self.init(state: .forbidden, reason: why)
        case .timeout(let why)?: self.init(state: .timeout, reason: why)
        case .failed(let why)?: self.init(state: .failed, reason: why)
        // Never ready: the player goes to the origin, as while an object is prepared.
        case .uncacheable(let why)?: self.init(state: .unavailable, reason: why)
        case .manifest(let format)?:
            self.init(state: .unavailable, reason: "the origin answered \(format.described) here, not a media object")
            manifest = format.rawValue
        }
    }

    /// What the origin answered at this path instead of a media object, if a manifest.
    public var manifestFormat: ManifestFormat? { manifest.flatMap(ManifestFormat.init(rawValue:)) }

    /// The checksums of a ready answer; nil when not ready or malformed (a bad length, piece
    /// size, digest count or digest).
    public var checksums: PieceChecksums? {
        // A length past a pebibyte is no object's (and one near 2^63 overflows `PieceLayout`:
        // a tracker, or anyone on a plain ws:// link, could crash the node).
        guard state == .ready, let length, let pieceSize, let digests, (0..<(1 << 50)).contains(length), (1...(64 << 20)).contains(pieceSize)
        else { return nil }
        let layout = PieceLayout(length: length, pieceSize: pieceSize)
        guard digests.count == layout.count else { return nil }
        var parsed: [PieceDigest] = []
        parsed.reserveCapacity(digests.count)
        for hex in digests {
            guard let bytes = Self.bytes(hex: hex), let d = PieceDigest(bytes: bytes) else { return nil }
            parsed.append(d)
        }
        return PieceChecksums(layout: layout, digests: parsed)
    }

    static func bytes(hex: String) -> [UInt8]? {
        let utf8 = Array(hex.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var i = 0
        while i < utf8.count {
            guard let hi = nibble(utf8[i]), let lo = nibble(utf8[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}
