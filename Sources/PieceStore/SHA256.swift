import CCrypto

/// A SHA-256 digest: the checksum of one piece.
public struct PieceDigest: Hashable, Sendable, CustomStringConvertible {
    /// The 32 digest bytes.
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    /// Lowercase hex.
    public var description: String { hexString(bytes) }

    /// The first 8 bytes in lowercase hex: enough to tell one copy of a piece from another
    /// (piece requests carry it, shared fetches are keyed by it).
    public var short: String { hexString(bytes.prefix(8)) }
}

/// OpenSSL's libcrypto, loaded by the process when first used.
public enum LibCrypto {
    /// Nil once libcrypto is loaded, else why it cannot be.
    private static let failure: String? = swarmgate_crypto_load().map { String(cString: $0) }

    /// Why libcrypto cannot be used (not installed, too old), or nil when it can. Commands
    /// that hash or sign check it first, to stop with that message.
    public static var unavailable: String? { failure }

    /// Call before any use of libcrypto; cheap after the first time. A process without it
    /// stops here with its reason (checked by the commands first).
    static func ensureLoaded() {
        if let failure { fatalError("libcrypto: \(failure)") }
    }
}

/// SHA-256 through OpenSSL's libcrypto (its EVP interface uses the CPU's SHA extensions).
public enum SHA256 {
    /// The digest of `data`.
    public static func hash(_ data: UnsafeRawBufferPointer) -> PieceDigest {
        LibCrypto.ensureLoaded()
        var out = [UInt8](repeating: 0, count: 32)
        let ok = out.withUnsafeMutableBufferPointer { o in
            swarmgate_sha256(data.baseAddress, data.count, o.baseAddress)
        }
        precondition(ok == 1, "SHA-256 failed")
        return PieceDigest(unchecked: out)
    }

    public static func hash(_ bytes: [UInt8]) -> PieceDigest {
        bytes.withUnsafeBytes { hash($0) }
    }

    /// Lowercase hex SHA-256 of a string's UTF-8 bytes (names files after keys).
    public static func hex(of text: String) -> String {
        hash(Array(text.utf8)).description
    }
}

/// SHA-256 fed in parts, for a piece that arrives in chunks.
public final class SHA256Hasher {
    private let context: UnsafeMutableRawPointer

    public init() {
        LibCrypto.ensureLoaded()
        guard let c = swarmgate_sha256_new() else { fatalError("SHA-256: out of memory") }
        context = c
    }

    deinit { swarmgate_sha256_free(context) }

    public func update(_ data: UnsafeRawBufferPointer) {
        guard data.count > 0 else { return }
        precondition(swarmgate_sha256_update(context, data.baseAddress, data.count) == 1, "SHA-256 update failed")
    }

    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The digest of everything fed so far; the hasher starts over afterwards.
    public func finish() -> PieceDigest {
        var out = [UInt8](repeating: 0, count: 32)
        out.withUnsafeMutableBufferPointer { o in
            precondition(swarmgate_sha256_finish(context, o.baseAddress) == 1, "SHA-256 finish failed")
        }
        return PieceDigest(unchecked: out)
    }
}

/// Lowercase hex of bytes.
public func hexString(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 15)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// HMAC-SHA256 (RFC 2104) through libcrypto: what signs swarm logins and piece tokens.
public enum HMACSHA256 {
    /// The 32-byte authentication code of `message` under `key`.
    public static func code(key: [UInt8], message: [UInt8]) -> [UInt8] {
        LibCrypto.ensureLoaded()
        var out = [UInt8](repeating: 0, count: 32)
        key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                out.withUnsafeMutableBufferPointer { o in
                    precondition(swarmgate_hmac_sha256(k.baseAddress, Int32(k.count), m.baseAddress, m.count, o.baseAddress) == 1, "HMAC-SHA256 failed")
                }
            }
        }
        return out
    }

    /// Lowercase hex of `code(key:message:)` for UTF-8 strings.
    public static func hex(key: String, message: String) -> String {
        hexString(code(key: Array(key.utf8), message: Array(message.utf8)))
    }

    /// Compares two byte strings in time that depends only on their lengths.
    public static func constantTimeEqual(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for (x, y) in zip(a, b) { diff |= x ^ y }
        return diff == 0
    }
}
