@testable import Gateway
import PieceStore
import Swarm
import Testing

/// What a node remembers of recent VOD lists (for prefetch and deadlines) is bounded by
/// objects, not only by lists: each stream's long MPD or playlist, opened under its own
/// xresid, once added some 50 MB that stayed.
@Suite("Play order")
struct PlayOrderTests {
    static func list(_ name: String, _ count: Int) -> [ObjectRef] {
        (0..<count).map { ObjectRef(key: ObjectKey(xresid: name, host: "cdn.example.com", path: "/seg\($0).m4s"), url: "https://cdn.example.com/seg\($0).m4s") }
    }

    @Test func theOldestListsGoOnceTheObjectsPassTheBound() {
        let order = PlayOrder(maxObjects: 1000)
        let per = 400
        let lists = (0..<3).map { Self.list("s\($0)", per) }
        for l in lists { order.record(l, durations: Array(repeating: 2.0, count: per)) }
        // Three lists of 2/5 of the bound: the first went for the third.
        #expect(!order.lists(lists[0][0].key))
        #expect(order.duration(of: lists[0][5].key) == nil)
        #expect(order.lists(lists[1][0].key) && order.lists(lists[2][per - 1].key))
        #expect(order.after(lists[2][0].key, count: 2).map(\.key) == [lists[2][1].key, lists[2][2].key])
    }

    @Test func aListLongerThanTheBoundIsKeptAsItsFirstPart() {
        let order = PlayOrder(maxObjects: 1000)
        let long = Self.list("long", 1010)
        order.record(long, durations: [])
        #expect(order.lists(long[999].key))
        #expect(!order.lists(long[1000].key))
    }

    /// A list too long for the tracker's `prepare` is sent in parts as players reach them.
    @Test func aPlayerPastTheFirstPartOfALongListHasItsPartSent() throws {
        let order = PlayOrder()
        let long = Self.list("long", 12_000)
        order.record(long, durations: Array(repeating: 2.0, count: long.count))
        #expect(order.readAheadPart(long[0].key) == nil, "the plan carries the start")
        let named = try #require(order.readAheadPart(long[10_500].key))
        #expect(order.readAheadPart(long[10_501].key)?.name == named.name, "one part, one name")
        let part = order.refs(in: (named.list, named.range))
        #expect(part.count <= SwarmMessage.maxPrepareRefs)
        let window = long[10_500...10_600].map(\.key)
        #expect(Set(part.map(\.key)).isSuperset(of: window), "the player's window lies in its part")
        #expect(order.readAheadPart(Self.list("short", 100)[5].key) == nil, "a list the node never read")
        let short = Self.list("short", 100)
        order.record(short, durations: [])
        #expect(order.readAheadPart(short[99].key) == nil, "one message carries it")
    }
}
