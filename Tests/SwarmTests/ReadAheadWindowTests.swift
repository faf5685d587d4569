import PieceStore
import Swarm
import Synchronization
import Testing

/// Which of a playlist's objects the registry prepares ahead of its players.
@Suite("Read-ahead window")
struct ReadAheadWindowTests {
    /// A playlist of `count` objects of `seconds` each (nil: no duration), under `name`.
    func playlist(_ name: String, _ count: Int, seconds: Double? = 4) -> [ObjectRef] {
        (0..<count).map { ObjectRef(key: ObjectKey(xresid: name, host: "cdn.example.com", path: "/\(name)/\($0).ts"), url: "https://cdn.example.com/\(name)/\($0).ts", duration: seconds) }
    }

    func indices(_ refs: [ObjectRef]) -> [Int] { refs.map { Int($0.path.split(separator: "/").last!.dropLast(3))! } }

    @Test func nothingIsDueUntilAPlayerReachesAnObjectThenTheWindowFollowsIt() {
        let window = ReadAheadWindow(ahead: .seconds(10))
        let list = playlist("a", 20)
        // Opened afresh: the player may start anywhere.
        #expect(window.plan(list).isEmpty)
        // It reached 0 (ends at 4 s): up to 14 s, so 1 to 3.
        #expect(indices(window.reached([list[0].key.id])) == [1, 2, 3])
        #expect(indices(window.reached([list[1].key.id])) == [4])
        // Reaching what it reached before, or an object no playlist names, brings nothing.
        #expect(window.reached([list[0].key.id, "unknown"]).isEmpty)
        // A seek to 12 prepares from 13, not the objects it skipped.
        #expect(indices(window.reached([list[12].key.id])) == [13, 14, 15])
        // The end of the playlist bounds the window.
        #expect(indices(window.reached([list[18].key.id])) == [19])
        #expect(indices(window.handedOut(list)) == [1, 2, 3, 4, 13, 14, 15, 19])
    }

    @Test func anObjectReachedBeforeItsPlaylistWasPlannedOpensTheWindowThere() {
        let window = ReadAheadWindow(ahead: .seconds(8))
        let list = playlist("r", 40)
        // A player resuming at 30: its first request came before the plan.
        #expect(window.reached([list[30].key.id]).isEmpty)
        #expect(indices(window.plan(list)) == [31, 32])
    }

    @Test func anObjectWithoutADurationTakesNoMediaTime() {
        let window = ReadAheadWindow(ahead: .seconds(5))
        let initSection = playlist("b-init", 1, seconds: nil)
        let list = initSection + playlist("b", 4)
        #expect(window.plan(list).isEmpty)
        // After the init section (no time): 0 s to 5 s, so segments 0 and 1.
        #expect(window.reached([list[0].key.id]).map(\.path) == ["/b/0.ts", "/b/1.ts"])
    }

    @Test func aPlaylistWithoutDurationsCountsSixSecondsAnObject() {
        let window = ReadAheadWindow(ahead: .seconds(12))
        let list = playlist("u", 10, seconds: nil)
        _ = window.plan(list)
        #expect(indices(window.reached([list[2].key.id])) == [3, 4])
    }

    @Test func thePlayersOfOnePlaylistShareOneWindow() {
        let window = ReadAheadWindow(ahead: .seconds(8))
        let list = playlist("c", 10)
        #expect(window.plan(list).isEmpty)
        #expect(indices(window.reached([list[0].key.id])) == [1, 2])
        // A second player opens the same playlist: it is the same window.
        #expect(window.plan(list).isEmpty)
        #expect(indices(window.reached([list[2].key.id])) == [3, 4])
    }

    @Test func noBoundIsTheWholePlaylistAndZeroIsNone() {
        let list = playlist("d", 30)
        let all = ReadAheadWindow(ahead: nil)
        #expect(all.plan(list).count == 30)
        #expect(all.handedOut(list).count == 30)
        let none = ReadAheadWindow(ahead: .zero)
        #expect(none.plan(list).isEmpty)
        #expect(none.reached([list[3].key.id]).isEmpty)
    }

    @Test func theLeastRecentlyUsedPlaylistsGoPastTheBound() {
        let window = ReadAheadWindow(ahead: .seconds(4), maxObjects: 25)
        let (e, f, g) = (playlist("e", 10), playlist("f", 10), playlist("g", 10))
        _ = window.plan(e)
        _ = window.plan(f)
        // e is used again, so f is the one that goes when g comes.
        #expect(indices(window.reached([e[0].key.id])) == [1])
        _ = window.plan(g)
        #expect(window.reached([f[5].key.id]).isEmpty)
        #expect(indices(window.reached([e[5].key.id])) == [6])
        #expect(indices(window.reached([g[5].key.id])) == [6])
    }

    /// What a restart needs: each playlist planned afresh (and those dropped for it) is told
    /// to the keeper, and a window restored from them moves on from the next object reached.
    @Test func plannedPlaylistsAreKeptAndRestoredAfterARestart() {
        let kept = Mutex<[(planned: (name: String, refs: [ObjectRef])?, dropped: [String])]>([])
        let keeper: ReadAheadWindow.Keeper = { planned, dropped in kept.withLock { $0.append((planned, dropped)) } }
        let before = ReadAheadWindow(ahead: .seconds(8), maxObjects: 15, keep: keeper)
        let (h, i) = (playlist("h", 10), playlist("i", 10))
        _ = before.plan(h)
        _ = before.plan(h)
        _ = before.plan(i)
        var log = kept.withLock { $0 }
        #expect(log.map { $0.planned?.refs.count } == [10, 10], "a playlist planned again is not kept again")
        #expect(log[0].dropped.isEmpty)
        #expect(log[1].dropped == [log[0].planned!.name], "h made room for i")
        // A player's newer URLs (new tokens) for the same objects replace the kept ones.
        let renewed = i.map { ObjectRef(key: $0.key, url: $0.url + "?token=new", duration: $0.duration) }
        _ = before.plan(renewed)
        log = kept.withLock { $0 }
        #expect(log.count == 3)
        #expect(log[2].planned?.refs.first?.url.hasSuffix("?token=new") == true)

        let after = ReadAheadWindow(ahead: .seconds(8), keep: keeper)
        after.restore([log[2].planned!])
        #expect(indices(after.reached([i[4].key.id])) == [5, 6])
        #expect(after.reached([i[8].key.id]).first?.url.hasSuffix("?token=new") == true)
        #expect(after.plan(renewed).isEmpty, "a restored playlist is known")
    }

    /// Past the bound the playlist used least recently goes (planned, or reached by a player),
    /// not the one planned first.
    @Test func theListUsedLeastRecentlyMakesRoom() {
        let kept = Mutex<[String]>([])
        let window = ReadAheadWindow(ahead: .seconds(8), maxObjects: 15) { _, dropped in kept.withLock { $0 += dropped } }
        let (a, b, c, d) = (playlist("a", 5), playlist("b", 5), playlist("c", 5), playlist("d", 5))
        for list in [a, b, c] { _ = window.plan(list) }
        _ = window.reached([a[1].key.id])
        _ = window.plan(d)
        #expect(kept.withLock { $0 } == ["\(b.first!.key.id) \(b.last!.key.id) 5"], "b, not a, which a player reached since")
        _ = window.plan(c)
        _ = window.plan(b)
        #expect(kept.withLock { $0.last } == "\(a.first!.key.id) \(a.last!.key.id) 5", "then a: c was planned again since")
        #expect(indices(window.reached([d[0].key.id])) == [1, 2])
    }

    /// Restoring more than the bound drops the oldest, and tells the keeper to forget them.
    @Test func aRestoreOverTheBoundForgetsTheOldest() {
        let kept = Mutex<[String]>([])
        let window = ReadAheadWindow(ahead: .seconds(8), maxObjects: 15) { _, dropped in kept.withLock { $0 += dropped } }
        let (j, k) = (playlist("j", 10), playlist("k", 10))
        let names = [j, k].map { "\($0.first!.key.id) \($0.last!.key.id) 10" }
        window.restore([(names[0], j), (names[1], k)])
        #expect(kept.withLock { $0 } == [names[0]])
        #expect(window.reached([j[2].key.id]).isEmpty)
        #expect(indices(window.reached([k[2].key.id])) == [3, 4])
    }
}
