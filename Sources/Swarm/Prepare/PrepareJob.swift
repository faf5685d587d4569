import PieceStore

/// One object to prepare (seed 001's download job): fetch it from the origin, hash its pieces,
/// keep the verified copy. Persistent, so a restart resumes where it stopped.
public struct PrepareJob: Sendable {
    public enum State: String, Sendable {
        case queued, running, paused, done, failed, cancelled

        /// Done, failed or cancelled: nothing runs it again unless it is asked for again.
        public var isFinished: Bool { self == .done || self == .failed || self == .cancelled }
    }

    public let key: ObjectKey
    /// The job's id in `/jobs`: the first 16 hex digits of the key's hash.
    public let id: String
    /// The origin URL (with its query) the job fetches. A redirect does not change the key.
    public var url: String
    public var state: State = .queued
    /// Asked for by a player now, so it goes before the playlist's read-ahead.
    public var urgent = false
    /// Queue order among jobs of the same urgency (playback order for a playlist's objects).
    public let sequence: Int64
    public let pieceSize: Int
    /// The object's length, once the origin said it.
    public var length: Int64?
    /// Bytes hashed and kept so far: always a whole number of pieces.
    public var bytesDone: Int64 = 0
    /// The validator (strong ETag or Last-Modified) that `bytesDone` belongs to; a resumed
    /// request sends it in `If-Range`.
    public var validator: String?
    /// The SHA-256 of each piece hashed so far, 32 bytes each.
    public var digests: [UInt8] = []
    public var error: String?

    public init(key: ObjectKey, url: String, pieceSize: Int, sequence: Int64) {
        self.key = key
        self.id = key.id.prefixID
        self.url = url
        self.pieceSize = pieceSize
        self.sequence = sequence
    }

    /// Starts over: nothing hashed, no validator.
    mutating func restart() {
        bytesDone = 0
        digests = []
        validator = nil
        length = nil
    }
}
