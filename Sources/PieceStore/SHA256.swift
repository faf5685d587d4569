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

/// SHA-256 through OpenSSL's libcrypto (its EVP interface uses the CPU's SHA extensions).
public enum SHA256 {
    /// The digest of `data`.
    public static func hash(_ data: UnsafeRawBufferPointer) -> PieceDigest {
        var out = [UInt8](repeating: 0, count: 32)
        var size: UInt32 = 0
        let ok = out.withUnsafeMutableBufferPointer { o in
            EVP_Digest(data.baseAddress, data.count, o.baseAddress, &size, EVP_sha256(), nil)
        }
        precondition(ok == 1 && size == 32, "EVP_Digest(SHA-256) failed")
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
    private let context: OpaquePointer

    public init() {
        guard let c = EVP_MD_CTX_new(), EVP_DigestInit_ex(c, EVP_sha256(), nil) == 1 else {
            fatalError("EVP_MD_CTX_new / EVP_DigestInit_ex(SHA-256) failed")
        }
        context = c
    }

    deinit { EVP_MD_CTX_free(context) }

    public func update(_ data: UnsafeRawBufferPointer) {
        guard data.count > 0 else { return }
        precondition(EVP_DigestUpdate(context, data.baseAddress, data.count) == 1, "EVP_DigestUpdate failed")
    }

    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The digest of everything fed so far; the hasher starts over afterwards.
    public func finish() -> PieceDigest {
        var out = [UInt8](repeating: 0, count: 32)
        var size: UInt32 = 0
        out.withUnsafeMutableBufferPointer { o in
            precondition(EVP_DigestFinal_ex(context, o.baseAddress, &size) == 1 && size == 32, "EVP_DigestFinal_ex failed")
        }
        precondition(EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1, "EVP_DigestInit_ex failed")
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
        var out = [UInt8](repeating: 0, count: 32)
        var size: UInt32 = 0
        key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                out.withUnsafeMutableBufferPointer { o in
                    let done = HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), m.baseAddress?.assumingMemoryBound(to: UInt8.self), m.count, o.baseAddress, &size)
                    precondition(done != nil && size == 32, "HMAC(SHA-256) failed")
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
