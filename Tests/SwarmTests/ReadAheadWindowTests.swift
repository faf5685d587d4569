import PieceStore
import Swarm
import Testing

/// Which of a playlist's objects the registry prepares ahead of its players.
@Suite("Read-ahead window")
struct ReadAheadWindowTests {
    /// A playlist of `count` objects of `seconds` each (nil: no duration), under `name`.
    func playlist(_ name: String, _ count: Int, seconds: Double? = 4) -> [ObjectRef] {
        (0..<count).map { ObjectRef(key: ObjectKey(xresid: name, host: "cdn.example.com", path: "/\(name)/\($0).ts"), url: "https://cdn.example.com/\(name)/\($0).ts", duration: seconds) }
    }

    func indices(_ refs: [ObjectRef]) -> [Int] { refs.map { Int($0.path.split(separator: "/").last!.dropLast(3))! } }

    @Test func theFirstObjectsWithinTheWindowAreDueThenTheWindowFollowsThePlayer() {
        let window = ReadAheadWindow(ahead: .seconds(10))
        let list = playlist("a", 20)
        // Starts 0, 4 and 8 s are within 10 s.
        #expect(indices(window.plan(list)) == [0, 1, 2])
        // The player reached 1 (ends at 8 s): up to 18 s, so 3 and 4 are new.
        #expect(indices(window.reached([list[1].key.id])) == [3, 4])
        // Reaching what it reached before, or an object no playlist names, brings nothing.
        #expect(window.reached([list[0].key.id, "unknown"]).isEmpty)
        // A seek to 12 prepares from 13, not the objects it skipped.
        #expect(indices(window.reached([list[12].key.id])) == [13, 14, 15])
        // The end of the playlist bounds the window.
        #expect(indices(window.reached([list[18].key.id])) == [19])
    }

    @Test func anObjectWithoutADurationTakesNoMediaTime() {
        let window = ReadAheadWindow(ahead: .seconds(5))
        let initSection = playlist("b-init", 1, seconds: nil)
        #expect(indices(window.plan(initSection + playlist("b", 3))) == [0, 0, 1])
    }

    @Test func thePlayersOfOnePlaylistShareOneWindow() {
        let window = ReadAheadWindow(ahead: .seconds(8))
        let list = playlist("c", 10)
        #expect(indices(window.plan(list)) == [0, 1])
        // A second player opens the same playlist: nothing more is due.
        #expect(window.plan(list).isEmpty)
        #expect(indices(window.reached([list[2].key.id])) == [3, 4])
    }

    @Test func noBoundIsTheWholePlaylistAndZeroIsNone() {
        let list = playlist("d", 30)
        #expect(ReadAheadWindow(ahead: nil).plan(list).count == 30)
        let none = ReadAheadWindow(ahead: .zero)
        #expect(none.plan(list).isEmpty)
        #expect(none.reached([list[3].key.id]).isEmpty)
    }

    @Test func theLeastRecentlyUsedPlaylistsGoPastTheBound() {
        let window = ReadAheadWindow(ahead: .seconds(4), maxObjects: 25)
        let (e, f, g) = (playlist("e", 10), playlist("f", 10), playlist("g", 10))
        #expect(indices(window.plan(e)) == [0])
        #expect(indices(window.plan(f)) == [0])
        // e is used again, so f is the one that goes when g comes.
        #expect(indices(window.reached([e[0].key.id])) == [1])
        #expect(indices(window.plan(g)) == [0])
        #expect(window.reached([f[5].key.id]).isEmpty)
        #expect(indices(window.reached([e[5].key.id])) == [6])
        #expect(indices(window.reached([g[5].key.id])) == [6])
    }
}
