import Foundation
import PieceStore
import Synchronization

/// A node's login to the tracker (SPEC section 3): app id, peer id, a timestamp and a nonce,
/// signed with HMAC-SHA256 under the app secret that nodes and tracker share.
public struct LoginProof: Sendable, Hashable {
    public let appID: String
    public let peerID: String
    /// Seconds since 1970.
    public let timestamp: Int64
    /// Random hex, never reused within the replay window.
    public let nonce: String
    /// Lowercase hex HMAC-SHA256 of `message`.
    public let signature: String

    public init(appID: String, peerID: String, timestamp: Int64, nonce: String, signature: String) {
        self.appID = appID
        self.peerID = peerID
        self.timestamp = timestamp
        self.nonce = nonce
        self.signature = signature
    }

    /// Signs a new login for `peerID` at `now` with a fresh nonce.
    public static func sign(appID: String, peerID: String, secret: String, now: Date = Date()) -> LoginProof {
        let nonce = hexString((0..<16).map { _ in UInt8.random(in: 0...255) })
        let ts = Int64(now.timeIntervalSince1970)
        return LoginProof(
            appID: appID, peerID: peerID, timestamp: ts, nonce: nonce,
            signature: HMACSHA256.hex(key: secret, message: message(appID, peerID, ts, nonce)))
    }

    /// What is signed: the four fields, newline-separated (none may hold a newline).
    static func message(_ appID: String, _ peerID: String, _ ts: Int64, _ nonce: String) -> String {
        "\(appID)\n\(peerID)\n\(ts)\n\(nonce)"
    }

    /// Whether the signature is right for `secret` (compared in constant time).
    public func isSigned(with secret: String) -> Bool {
        guard ![appID, peerID, nonce].contains(where: { $0.contains("\n") || $0.isEmpty }) else { return false }
        let expected = HMACSHA256.hex(key: secret, message: Self.message(appID, peerID, timestamp, nonce))
        return HMACSHA256.constantTimeEqual(Array(expected.utf8), Array(signature.utf8))
    }
}

/// Why a login was refused.
public enum LoginRefusal: String, Error, Sendable {
    case unknownApp = "unknown app id"
    case badSignature = "bad signature"
    case stale = "timestamp outside the replay window"
    case replayed = "nonce already used"
    case banned = "peer URL banned for bad pieces"
    case badPeerID = "the peer id must be 1 to 128 of A-Z a-z 0-9 . _ : -"
    case peerInUse = "the peer id is logged in from another URL"
    case badURL = "the peer URL must be http(s)://HOST[:PORT][/PATH], with no user, query or fragment"
}

/// Where a tracker keeps the login nonces it accepted, so that a restart does not forget
/// them: a login captured just before a restart could otherwise be played back after it,
/// within the replay window, and take the node's peer id (the node would then be refused as
/// "in use").
public protocol NonceLog: Sendable {
    /// The nonces accepted at or after `since`, with when.
    func nonces(since: Date) throws -> [(nonce: String, at: Date)]
    /// Keeps `nonce`, accepted at `at`, and forgets those accepted before `forgetBefore`.
    func record(_ nonce: String, at: Date, forgetBefore: Date) throws
}

/// Accepts logins: right app, right signature, a timestamp within `window` of now, and a nonce
/// not seen within the window (a captured login cannot be played back), across restarts too
/// when nonces are kept in a `NonceLog`.
public final class LoginVerifier: Sendable {
    public let appID: String
    private let secret: String
    public let window: TimeInterval
    private let seen = Mutex<[String: Date]>([:])
    private let log: (any NonceLog)?
    /// Where accepted nonces are written, one after another: off the caller's thread (a
    /// login runs on one of Swift's few cooperative threads, and the write may wait behind
    /// the registry's), so a restarted tracker that every node logs in to again is not held.
    private let writes = DispatchQueue(label: "swarmgate.login-nonces", qos: .utility)

    public init(appID: String, secret: String, window: TimeInterval = 60, log: (any NonceLog)? = nil, now: Date = Date()) {
        self.appID = appID
        self.secret = secret
        self.window = window
        self.log = log
        // A log that cannot be read leaves the memory empty, as without one.
        let kept = (try? log?.nonces(since: now.addingTimeInterval(-2 * window))) ?? []
        seen.withLock { seen in for (nonce, at) in kept { seen[nonce] = at } }
    }

    public func verify(_ proof: LoginProof, now: Date = Date()) throws(LoginRefusal) {
        guard proof.appID == appID else { throw .unknownApp }
        guard proof.isSigned(with: secret) else { throw .badSignature }
        guard abs(now.timeIntervalSince1970 - Double(proof.timestamp)) <= window else { throw .stale }
        let fresh = seen.withLock { seen -> Bool in
            // Nonces older than the window can go: their timestamps are refused anyway.
            if seen.count > 1024 { seen = seen.filter { now.timeIntervalSince($0.value) <= 2 * window } }
            guard seen[proof.nonce] == nil else { return false }
            seen[proof.nonce] = now
            return true
        }
        guard fresh else { throw .replayed }
        // Not written: the login still passes (this process remembers the nonce).
        if let log {
            let (nonce, forget) = (proof.nonce, now.addingTimeInterval(-2 * window))
            writes.async { try? log.record(nonce, at: now, forgetBefore: forget) }
        }
    }
}

/// A short-lived permission, issued by the tracker, for `requester` to fetch pieces of one
/// object from `holder`: `EXPIRY.HEXMAC`, the MAC over (requester, holder, object, expiry)
/// under the app secret, so the holder checks it without asking the tracker.
public struct PieceToken: Sendable, Hashable {
    public let requester: String
    public let holder: String
    public let objectID: String
    public let expiry: Int64

    public init(requester: String, holder: String, objectID: String, expiry: Int64) {
        self.requester = requester
        self.holder = holder
        self.objectID = objectID
        self.expiry = expiry
    }

    func mac(_ secret: String) -> String {
        HMACSHA256.hex(key: secret, message: "piece\n\(requester)\n\(holder)\n\(objectID)\n\(expiry)")
    }

    /// The token as sent in a piece request.
    public func encoded(secret: String) -> String { "\(expiry).\(mac(secret))" }

    /// The furthest a token's expiry may be from `now`: the tracker grants 60 s, and nodes'
    /// clocks are within the login's replay window (60 s) of the tracker's.
    public static let maxLifetime: TimeInterval = 300

    /// Whether `encoded` is this permission under `secret`, unexpired at `now`, with an expiry
    /// written as the tracker writes it (`+E` or `0E` passed before, as the same permission)
    /// and no further than `maxLifetime` ahead (a token minted for years passed before).
    public func isValid(_ encoded: String, secret: String, now: Date = Date()) -> Bool {
        guard let dot = encoded.firstIndex(of: "."), encoded[..<dot] == String(self.expiry),
            (now.timeIntervalSince1970...now.timeIntervalSince1970 + Self.maxLifetime).contains(Double(expiry))
        else { return false }
        return HMACSHA256.constantTimeEqual(Array(encoded[encoded.index(after: dot)...].utf8), Array(mac(secret).utf8))
    }
}
