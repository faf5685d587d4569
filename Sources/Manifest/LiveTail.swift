/// Where the players of a live stream start and what they fetch next: the newest segments
/// of its list, those within three target durations of its end (RFC 8216bis 6.3.3; DASH
/// players likewise start a few segments back from the live edge), and the initialization
/// section the first of them plays with. What a gateway prepares before players ask.
public enum LiveTail {
    /// Segments in a tail, at most (when durations are missing or tiny).
    public static let maxSegments = 8

    /// The tail of `items` (a list in playback order of segments and initialization
    /// sections), in playback order: segments from the end until they span three of the
    /// longest segment's duration or `maxSegments`, then the nearest initialization section
    /// above the first of them.
    public static func of<Item>(_ items: [Item], isInitialization: (Item) -> Bool, duration: (Item) -> Double?) -> [Item] {
        let target = items.filter { !isInitialization($0) }.compactMap(duration).max() ?? 0
        var tail: [Item] = []
        var seconds = 0.0
        var segments = 0
        var spanned: Bool { (target > 0 && seconds >= 3 * target) || segments >= maxSegments }
        for item in items.reversed() {
            if isInitialization(item) {
                tail.append(item)
                if spanned { break }
            } else if !spanned {
                tail.append(item)
                seconds += duration(item) ?? 0
                segments += 1
            }
        }
        return tail.reversed()
    }
}
