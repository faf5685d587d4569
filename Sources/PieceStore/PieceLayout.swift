/// How an object of `length` bytes splits into fixed-size pieces (the last may be shorter).
public struct PieceLayout: Hashable, Sendable {
    public let length: Int64
    public let pieceSize: Int

    public init(length: Int64, pieceSize: Int) {
        precondition(length >= 0 && pieceSize > 0)
        self.length = length
        self.pieceSize = pieceSize
    }

    public var count: Int { Int((length + Int64(pieceSize) - 1) / Int64(pieceSize)) }

    /// The object offset where piece `index` starts.
    public func offset(of index: Int) -> Int64 { Int64(index) * Int64(pieceSize) }

    /// The byte count of piece `index`.
    public func size(of index: Int) -> Int {
        Int(min(Int64(pieceSize), length - offset(of: index)))
    }

    /// The piece holding object offset `offset`.
    public func index(at offset: Int64) -> Int { Int(offset / Int64(pieceSize)) }
}

/// An object's checksums as the registry computed them from the CDN copy: its layout and the
/// SHA-256 of every piece, in order.
public struct PieceChecksums: Hashable, Sendable {
    public let layout: PieceLayout
    public let digests: [PieceDigest]

    public init?(layout: PieceLayout, digests: [PieceDigest]) {
        guard digests.count == layout.count else { return nil }
        self.layout = layout
        self.digests = digests
    }

    /// Whether `bytes` are exactly piece `index`.
    public func matches(_ index: Int, _ bytes: UnsafeRawBufferPointer) -> Bool {
        index >= 0 && index < digests.count && bytes.count == layout.size(of: index) && SHA256.hash(bytes) == digests[index]
    }

    /// The first 16 hex digits of the SHA-256 of the layout and every digest: one copy of an
    /// object told from another (the origin's changed).
    public var fingerprint: String {
        let bytes = Array("\(layout.length)/\(layout.pieceSize)/".utf8) + packed
        return bytes.withUnsafeBytes { SHA256.hash($0) }.short
    }

    /// The digests back to back, 32 bytes each (how they are stored).
    public var packed: [UInt8] { digests.flatMap(\.bytes) }

    public init?(layout: PieceLayout, packed: [UInt8]) {
        guard packed.count == layout.count * 32 else { return nil }
        var d: [PieceDigest] = []
        d.reserveCapacity(layout.count)
        for i in 0..<layout.count { d.append(PieceDigest(unchecked: Array(packed[i * 32..<(i + 1) * 32]))) }
        self.init(layout: layout, digests: d)
    }
}

/// Which pieces of an object are on disk, verified.
public struct PieceBitmap: Hashable, Sendable {
    public private(set) var bits: [UInt8]
    public let count: Int

    public init(count: Int) {
        self.count = count
        bits = [UInt8](repeating: 0, count: (count + 7) / 8)
    }

    public init?(count: Int, bits: [UInt8]) {
        guard bits.count == (count + 7) / 8 else { return nil }
        self.count = count
        self.bits = bits
    }

    public subscript(index: Int) -> Bool {
        get { index >= 0 && index < count && bits[index >> 3] & (1 << UInt8(index & 7)) != 0 }
        set {
            guard index >= 0 && index < count else { return }
            if newValue { bits[index >> 3] |= 1 << UInt8(index & 7) } else { bits[index >> 3] &= ~(1 << UInt8(index & 7)) }
        }
    }

    public var isEmpty: Bool { bits.allSatisfy { $0 == 0 } }
}
