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
        list.use("b")  // from the middle
        list.use("a")  // the oldest
        list.use("a")  // the newest again
        #expect(list.fromOldest == ["c", "d", "b", "a"])
        list.remove("d")  // the middle
        list.remove("c")  // the oldest
        list.remove("a")  // the newest
        list.remove("zz")  // not listed
        #expect(list.fromOldest == ["b"] && list.oldest == "b" && list.count == 1)
        list.use("e")
        #expect(list.newer(than: "b") == "e" && list.newer(than: "e") == nil)
        list.remove("b")
        list.remove("e")
        #expect(list.oldest == nil && list.count == 0)
        list.use("f")
        #expect(list.fromOldest == ["f"])
    }
}
