import PieceStore
import Testing

/// The order eviction walks: least recently used first, whatever was used, added or taken out.
@Suite("Recency list")
struct RecencyListTests {
    @Test func idsComeLeastRecentlyUsedFirstThroughUsesAndRemovals() {
        var list = RecencyList<String>()
        #expect(list.oldest == nil && list.fromOldest.isEmpty)
        for id in ["a", "b", "c", "d"] { list.use(id) }
        #expect(list.fromOldest == ["a", "b", "c", "d"])
        let moves = [list.use("b"), list.use("a"), list.use("a")]  // the middle, the oldest, the newest again
        #expect(moves == [true, true, false], "a use changes the order unless it is of the newest")
        #expect(list.fromOldest == ["c", "d", "b", "a"])
        list.remove("d")  // the middle
        list.remove("c")  // the oldest
        list.remove("a")  // the newest
        list.remove("zz")  // not listed
        #expect(list.fromOldest == ["b"] && list.oldest == "b" && list.count == 1)
        let added = list.use("e")
        #expect(added)
        #expect(list.newer(than: "b") == "e" && list.newer(than: "e") == nil)
        list.remove("b")
        list.remove("e")
        #expect(list.oldest == nil && list.count == 0)
        list.use("f")
        #expect(list.fromOldest == ["f"])
    }
}
