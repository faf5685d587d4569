import NIOCore
import PieceStore
import Testing

@testable import Gateway

/// The memory cache: verified pieces under a byte bound, the least recently used out first,
/// each handed out only while its checksum is still the registry's.
@Suite("Memory cache")
struct HotPiecesTests {
    func key(_ n: Int) -> ObjectKey { ObjectKey(xresid: "s", host: "cdn.example.com", path: "/\(n).ts") }

    func piece(_ fill: UInt8, _ size: Int = 1000) -> (ByteBuffer, PieceDigest) {
        let bytes = [UInt8](repeating: fill, count: size)
        return (ByteBuffer(bytes: bytes), SHA256.hash(bytes))
    }

    @Test func theLeastRecentlyUsedGoFirstAndTheBoundHolds() {
        let hot = HotPieces(capacity: 3000)
        let pieces = (0..<5).map { piece(UInt8($0)) }
        for n in 0..<3 { hot.put(key(n), 0, digest: pieces[n].1, pieces[n].0) }
        #expect(hot.get(key(0), 0, digest: pieces[0].1) == pieces[0].0)  // 0 is now newer than 1
        hot.put(key(3), 0, digest: pieces[3].1, pieces[3].0)
        #expect(hot.get(key(1), 0, digest: pieces[1].1) == nil, "the least recently used went")
        for n in [0, 2, 3] { #expect(hot.get(key(n), 0, digest: pieces[n].1) == pieces[n].0) }
        // 2 put again, larger (its object's new copy has larger pieces) while it is the least
        // recently used: it is counted once. Before, its old bytes were taken off the count
        // twice, 3 stayed, and the memory held went past the bound.
        hot.put(key(4), 0, digest: pieces[4].1, pieces[4].0)  // 2, 3, 4 now; 2 the oldest
        let larger = piece(7, 2000)
        hot.put(key(2), 0, digest: larger.1, larger.0)
        #expect(hot.get(key(3), 0, digest: pieces[3].1) == nil, "the next least recently used went to make room")
        #expect(hot.get(key(4), 0, digest: pieces[4].1) == pieces[4].0)
        #expect(hot.get(key(2), 0, digest: larger.1) == larger.0)
        #expect(hot.bytes == 3000, "what is held: 1000 + 2000")
        // A piece larger than the bound is not kept, and nothing goes for it.
        let big = piece(9, 4000)
        hot.put(key(9), 0, digest: big.1, big.0)
        #expect(hot.get(key(9), 0, digest: big.1) == nil)
        #expect(hot.bytes == 3000)
    }

    @Test func aPieceWhoseChecksumChangedIsDroppedNotHandedOut() {
        let hot = HotPieces(capacity: 3000)
        let (old, oldDigest) = piece(1)
        hot.put(key(0), 0, digest: oldDigest, old)
        #expect(hot.get(key(0), 0, digest: piece(2).1) == nil)
        #expect(hot.get(key(0), 0, digest: oldDigest) == nil, "dropped")
        #expect(hot.bytes == 0)
    }
}
