import Gateway
import Testing

/// The per-stream counts behind `/stat?xresid=`, in process: how many streams they keep.
@Suite("Traffic stats")
struct TrafficStatsTests {
    /// At most `maxStreams` streams' counts are kept, the ones counted last: every xresid ever
    /// seen was kept for good, and a client can make up as many as it likes (each request
    /// `&xresid=` anything). A stream counted all along keeps its counts; the totals keep all.
    @Test func theStreamsCountedLastAreKept() {
        let stats = TrafficStats()
        let made = TrafficStats.maxStreams * 3 / 2
        for i in 0..<made {
            stats.add(1, from: .cdn, xresid: "made-up-\(i)")
            stats.add(2, from: .p2p, xresid: "played")
        }
        #expect(stats.stream("made-up-0") == nil, "the first made-up stream is let go")
        #expect(stats.stream("made-up-\(made - 1)")?.cdnBytes == 1, "the last is kept")
        let played = stats.stream("played")
        #expect(played?.p2pBytes == Int64(2 * made), "a stream counted all along keeps its counts: \(String(describing: played))")
        #expect(stats.total.cdnBytes == Int64(made), "the totals count every stream")
        let kept = (0..<made).filter { stats.stream("made-up-\($0)") != nil }.count
        #expect(kept <= TrafficStats.maxStreams && kept >= TrafficStats.maxStreams / 2 - 1, "\(kept) kept")
    }
}
