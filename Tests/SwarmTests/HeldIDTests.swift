import PieceStore
import Testing

@testable import Swarm

/// The tracker keeps each announced object id as its first 128 bits: ids that differ there are
/// different, and only ids (64 lowercase hex digits) are taken.
@Suite("Held ids")
struct HeldIDTests {
    @Test func idsDifferingInAnyOfTheirFirst32DigitsAreDifferent() throws {
        let id = ObjectKey(xresid: "s", host: "h", path: "/seg1.ts").id
        let packed = try #require(HeldID(id))
        #expect(HeldID(String(id)) == packed)
        var seen: Set<HeldID> = [packed]
        for place in 0..<64 {
            var digits = Array(id.utf8)
            digits[place] = digits[place] == UInt8(ascii: "0") ? UInt8(ascii: "f") : UInt8(ascii: "0")
            let other = try #require(HeldID(String(decoding: digits, as: UTF8.self)))
            #expect((other != packed) == (place < 32), "digit \(place)")
            seen.insert(other)
        }
        #expect(seen.count == 33)
        // Ids of real keys: a thousand segments, a thousand values.
        let many = (0..<1000).compactMap { HeldID(ObjectKey(xresid: "s", host: "h", path: "/seg\($0).ts").id) }
        #expect(Set(many).count == 1000)
    }

    @Test(arguments: [
        "",
        String(repeating: "a", count: 63),
        String(repeating: "a", count: 65),
        String(repeating: "A", count: 64),
        String(repeating: "a", count: 63) + "g",
        String(repeating: "a", count: 63) + " ",
        String(repeating: "a", count: 62) + "é",
    ])
    func whatIsNotAnIDIsRefused(_ text: String) {
        #expect(HeldID(text) == nil)
        #expect(!ObjectKey.isID(text), "the same rule as ObjectKey.isID")
    }
}
