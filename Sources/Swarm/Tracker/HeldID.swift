/// An announced object id (`ObjectKey.id`: 64 lowercase hex digits) as the tracker keeps it for
/// every session that holds the object: its first 128 bits, 16 bytes. Kept as a `String`, each
/// took 168 bytes of the tracker's memory (the text on the heap, its header, the set's slot),
/// and takes 49 now (`scripts/bench swarm`): 300 gateways holding 60,000 segments each were
/// about 3 GB.
///
/// Ids are SHA-256 hashes of their keys, so two objects' ids share their first 128 bits with a
/// chance of about n²/2¹²⁹ among n ids (10⁻²⁴ for 18 million). A node that announces a made-up
/// id sharing them with a real object's is taken to hold that object: as it would be had it
/// announced the real id, which it may. Either way its pieces are checked against the
/// registry's checksums, and a bad one gets it reported and banned.
struct HeldID: Hashable, Sendable {
    private var high: UInt64 = 0
    private var low: UInt64 = 0

    /// Nil unless `id` is an object id: 64 lowercase hex digits.
    init?(_ id: String) {
        var digits = 0
        for byte in id.utf8 {
            guard digits < 64, let value = Self.value(ofDigit: byte) else { return nil }
            switch digits >> 4 {
            case 0: high = high << 4 | value
            case 1: low = low << 4 | value
            default: break  // checked, not kept
            }
            digits += 1
        }
        guard digits == 64 else { return nil }
    }

    private static func value(ofDigit byte: UInt8) -> UInt64? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt64(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt64(byte - UInt8(ascii: "a") + 10)
        default: nil
        }
    }
}
