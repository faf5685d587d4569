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
    public var description: String { hex(bytes) }
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

func hex(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 15)])
    }
    return String(decoding: out, as: UTF8.self)
}
