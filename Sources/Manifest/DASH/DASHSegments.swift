/// One object of a Representation, in playback order.
public struct DASHSegment: Hashable, Sendable {
    /// The absolute origin URL, template identifiers substituted.
    public var url: String
    /// Seconds of media, when the MPD gives them; nil for an initialization segment.
    public var duration: Double?
    public var isInitialization: Bool

    public init(url: String, duration: Double?, isInitialization: Bool = false) {
        self.url = url
        self.duration = duration
        self.isInitialization = isInitialization
    }
}

/// A Representation's objects in playback order (its initialization first): what read-ahead
/// and prefetch follow, as a VOD playlist's segments for HLS.
public struct DASHSegmentList: Hashable, Sendable {
    /// `Representation@id`.
    public var representationID: String?
    /// The Representation's place among all of the MPD's, in document order.
    public var position: Int
    public var segments: [DASHSegment]
}

/// The segments of a static MPD's Representations (`DASHRewriter.Options.collectSegments`),
/// or the live tail of a dynamic one's current Period (`Options.now`):
/// SegmentTemplate with a SegmentTimeline or a `@duration` (`$Number$`, `$Time$`,
/// `$RepresentationID$`, `$Bandwidth$`, with `%0Nd` widths), and SegmentList. Worked out on
/// the values as the origin wrote them, attribute by attribute inherited from Period and
/// AdaptationSet. A Representation the rules do not cover (SegmentBase, an unknown
/// identifier, no length to count segments against) has no list: read-ahead is an
/// optimisation, so anything odd leaves it out rather than failing the rewrite.
extension DASHRewriteRun {
    /// The most segments listed for one MPD (a timeline's `@r` can claim billions).
    static let maxListedSegments = 200_000

    /// What a listing covers.
    enum Listing {
        /// Every segment: a static MPD.
        case all
        /// The newest segments of a dynamic MPD's Period; `edge`: seconds from the Period's
        /// start to now, where segments stop being available (nil when the MPD does not say
        /// when it started).
        case tail(edge: Double?)

        var isTail: Bool { if case .tail = self { true } else { false } }
    }

    func segmentLists() -> [DASHSegmentList] {
        let type = root.attribute("type").map { String(decoding: $0, as: UTF8.self) } ?? "static"
        let periodTimes = periodTimes()
        var current: Int?
        var listing = Listing.all
        switch type {
        case "static":
            break
        case "dynamic":
            // Live: only the current Period's newest segments matter.
            guard let now = r.options.now, !periods.isEmpty else { return [] }
            if let started = root.attribute("availabilityStartTime").flatMap(Self.epochSeconds) {
                // The last Period that has started (one announced for later has not).
                let elapsed = now - started
                guard elapsed.isFinite, elapsed >= 0,
                    let i = periodTimes.indices.last(where: { periodTimes[$0].start.map { $0 <= elapsed } ?? false }),
                    let start = periodTimes[i].start
                else { return [] }
                current = i
                listing = .tail(edge: elapsed - start)
            } else {
                // No start time (a dynamic MPD must give one): the last Period's timelines as written.
                current = periods.count - 1
                listing = .tail(edge: nil)
            }
        default:
            return []
        }
        var work = ListingWork()
        var lists: [DASHSegmentList] = []
        for (position, rep) in representations.enumerated() where work.segments > 0 && work.bytes > 0 {
            if let current, rep.period != current { continue }
            let seconds = rep.period < periodTimes.count ? periodTimes[rep.period].span : nil
            var segments = templateSegments(rep, periodSeconds: seconds, listing: listing, work: &work) ?? listSegments(rep, work: &work)
            if listing.isTail, let listed = segments {
                segments = LiveTail.of(listed, isInitialization: \.isInitialization, duration: \.duration)
            }
            if let segments, segments.contains(where: { !$0.isInitialization }) {
                lists.append(DASHSegmentList(representationID: rep.id, position: position, segments: segments))
            }
        }
        return lists
    }

    /// Each Period's start and length in seconds, when the MPD gives them: its `@start`, else
    /// the end of the Period before (the first starts at 0); `@duration`, else up to the next
    /// Period's start, else up to `MPD@mediaPresentationDuration`.
    func periodTimes() -> [(start: Double?, span: Double?)] {
        let total = root.attribute("mediaPresentationDuration").flatMap(Self.seconds)
        var starts: [Double?] = []
        var durations: [Double?] = []
        var previousEnd: Double? = 0
        for p in periods {
            let start = p.attribute("start").flatMap(Self.seconds) ?? previousEnd
            let duration = p.attribute("duration").flatMap(Self.seconds)
            starts.append(start)
            durations.append(duration)
            previousEnd = start.flatMap { s in duration.map { s + $0 } }
        }
        return periods.indices.map { i in
            if let d = durations[i] { return (starts[i], d) }
            guard let start = starts[i] else { return (nil, nil) }
            let end = i + 1 < periods.count ? starts[i + 1] : total
            return (start, end.map { $0 - start }.flatMap { $0 > 0 ? $0 : nil })
        }
    }

    /// The elements of `kind` a Representation takes its segments from, innermost first.
    func chain(_ rep: RepresentationScope, _ kind: SegmentKind) -> [MPDNode] {
        ([rep.own[kind.rawValue]] + rep.inherited[kind.rawValue].reversed()).compactMap { $0 }
    }

    /// Attribute `name` from the innermost element of `chain` that has it.
    static func inherited(_ name: StaticString, _ chain: [MPDNode]) -> [UInt8]? {
        for node in chain { if let v = node.attribute(name) { return v } }
        return nil
    }

    // MARK: SegmentTemplate

    func templateSegments(
        _ rep: RepresentationScope, periodSeconds: Double?, listing: Listing = .all, work: inout ListingWork
    ) -> [DASHSegment]? {
        let chain = chain(rep, .template)
        guard !chain.isEmpty, let rawMedia = Self.inherited("media", chain),
            let media = try? r.writer.origin(rawMedia[...], in: rep.base), let template = SegmentTemplateURL(media)
        else { return nil }
        // Every Representation's template is charged, listed or not.
        work.bytes -= media.utf8.count
        guard work.bytes > 0 else { return nil }
        let timescale = Self.inherited("timescale", chain).flatMap(Self.integer) ?? 1
        let startNumber = Self.inherited("startNumber", chain).flatMap(Self.integer) ?? 1
        let offset = Self.inherited("presentationTimeOffset", chain).flatMap(Self.integer) ?? 0
        let bandwidth = rep.node.attribute("bandwidth").flatMap(Self.integer)
        // A template this Representation cannot fill (no @id, no @bandwidth) lists nothing.
        guard timescale > 0, template.url(number: 0, time: 0, representationID: rep.id, bandwidth: bandwidth) != nil else { return nil }
        var segments: [DASHSegment] = []
        if let rawInit = work.initialization(chain), let initURL = try? r.writer.origin(rawInit[...], in: rep.base),
            let initTemplate = SegmentTemplateURL(initURL), !initTemplate.usesNumberOrTime,
            let url = initTemplate.url(number: 0, time: 0, representationID: rep.id, bandwidth: bandwidth)
        {
            segments.append(DASHSegment(url: url, duration: nil, isInitialization: true))
        }
        // Media times and numbers (counted from startNumber), from the timeline or from
        // @duration. A live tail keeps the newest `LiveTail.maxSegments`, skipping the rest.
        let keep = LiveTail.maxSegments
        var times: [(index: UInt64, time: UInt64, duration: UInt64)] = []
        // The last segment's index, from @endNumber (the last segment's number), whatever
        // the addressing: a timeline that runs on past it lists segments that do not exist.
        let lastIndex = Self.inherited("endNumber", chain).flatMap(Self.integer).flatMap { $0 >= startNumber ? $0 - startNumber : nil }
        // The Period's end on the media timeline (nil when unknown or out of range); a
        // product a hair over a whole tick (PT0.3S at 10 ticks) is that tick.
        let periodEnd = periodSeconds.flatMap { seconds -> UInt64? in
            let ticks = seconds * Double(timescale)
            return UInt64(exactly: max(0, ticks - max(1e-9, ticks * 1e-12)).rounded(.up))
        }.flatMap { Self.sum(offset, $0) }
        // Live: where available segments end on the media timeline.
        let liveEnd: UInt64? =
            if case .tail(let edge?) = listing { UInt64(exactly: (edge * Double(timescale)).rounded(.down)).flatMap { Self.sum(offset, $0) } } else { nil }
        if let timeline = work.timeline(chain) {
            if listing.isTail {
                // The same for every Representation that shares the timeline and its timing.
                guard let tail = work.liveTail(of: timeline, liveEnd: liveEnd, periodEnd: periodEnd, lastIndex: lastIndex, keep: keep) else { return nil }
                times = tail
            } else {
                guard let entries = work.entries(of: timeline) else { return nil }
                var t: UInt64 = 0
                timeline: for (i, s) in entries.items.enumerated() {
                    if let start = s.t { t = start }
                    guard let count = Self.count(s, at: i, t: t, in: entries, liveEnd: nil, periodEnd: periodEnd) else { return nil }
                    for _ in 0..<count {
                        if let lastIndex, UInt64(times.count) > lastIndex { break timeline }
                        guard work.segments > 0 else { break }
                        work.segments -= 1
                        times.append((UInt64(times.count), t, s.d))
                        guard let next = Self.sum(t, s.d) else { return nil }
                        t = next
                    }
                }
            }
        } else {
            guard !template.usesTime, let duration = Self.inherited("duration", chain).flatMap(Self.integer), duration > 0 else { return nil }
            var count: UInt64
            if listing.isTail {
                // Live: the segments whole before the edge, up to the Period's end if it has one.
                guard let liveEnd else { return nil }
                count = (liveEnd - offset) / duration
                if let periodEnd { count = min(count, Self.ceilDiv(periodEnd - offset, duration)) }
            } else {
                guard let end = periodEnd else { return nil }
                count = Self.ceilDiv(end - offset, duration)
            }
            if let lastIndex { count = min(count, lastIndex + 1) }  // endNumber <= 10^19 - 1 < UInt64.max
            // Live: the newest, as many as the bound allows.
            let first = listing.isTail ? count - min(count, UInt64(keep), UInt64(max(0, work.segments))) : 0
            for k in first..<(first + min(count - first, UInt64(max(0, work.segments)))) {
                let (product, overflow) = k.multipliedReportingOverflow(by: duration)
                guard !overflow, let time = Self.sum(offset, product) else { return nil }
                times.append((k, time, duration))
            }
            work.segments -= times.count
        }
        guard !times.isEmpty else { return nil }
        for s in times {
            guard let number = Self.sum(startNumber, s.index),
                let url = template.url(number: number, time: s.time, representationID: rep.id, bandwidth: bandwidth)
            else { return nil }
            // URLs as long as the MPD allows, times thousands, would be gigabytes: the list
            // ends where the bytes run out.
            work.bytes -= url.utf8.count
            guard work.bytes >= 0 else { break }
            segments.append(DASHSegment(url: url, duration: Double(s.duration) / Double(timescale)))
        }
        return segments
    }

    /// How many segments timeline entry `s` (the `i`th, starting at `t`) stands for: `@r + 1`;
    /// for `@r="-1"`, up to the next entry's `@t`, else to `liveEnd` (whole segments only) or
    /// `periodEnd`. Live (`liveEnd`), only those whole before it. Nil when it cannot be told.
    static func count(
        _ s: SegmentTimelineEntries.Entry, at i: Int, t: UInt64, in entries: SegmentTimelineEntries, liveEnd: UInt64?, periodEnd: UInt64?
    ) -> UInt64? {
        guard s.d > 0 else { return nil }
        var count: UInt64
        if s.r >= 0 {
            count = UInt64(s.r) + 1
        } else if i + 1 < entries.items.count {
            guard let next = entries.items[i + 1].t, next > t else { return nil }
            count = Self.ceilDiv(next - t, s.d)
        } else if liveEnd == nil {
            guard let end = periodEnd, end > t else { return nil }
            count = Self.ceilDiv(end - t, s.d)
        } else {
            count = UInt64.max
            if let periodEnd, periodEnd > t { count = Self.ceilDiv(periodEnd - t, s.d) }
        }
        if let liveEnd { count = min(count, liveEnd > t ? (liveEnd - t) / s.d : 0) }
        return count
    }

    // MARK: SegmentList

    func listSegments(_ rep: RepresentationScope, work: inout ListingWork) -> [DASHSegment]? {
        let chain = chain(rep, .list)
        guard !chain.isEmpty else { return nil }
        let timescale = Self.inherited("timescale", chain).flatMap(Self.integer) ?? 1
        let duration = Self.inherited("duration", chain).flatMap(Self.integer).map { Double($0) / Double(max(timescale, 1)) }
        var initURL: String?
        var media: [String]?
        // Each child kind from the innermost level that has it (a lower SegmentList with its
        // own SegmentURLs replaces them all).
        for node in chain {
            var urls: [String] = []
            var sawURLs = false
            try? node.forEachElementChild { child in
                // Every child visited is charged: thousands of Representations under one long
                // SegmentList cost the bound, not its length times their number.
                guard work.segments > 0, work.bytes > 0 else { return }
                work.segments -= 1
                switch SegmentItem.childKind(child) {
                case 0 where initURL == nil:
                    initURL = child.attribute("sourceURL").flatMap { try? r.writer.origin($0[...], in: rep.base) }
                case 3 where media == nil:
                    sawURLs = true
                    if let m = child.attribute("media"), let url = try? r.writer.origin(m[...], in: rep.base) {
                        work.bytes -= url.utf8.count
                        urls.append(url)
                    }
                default:
                    break
                }
            }
            if sawURLs && media == nil { media = urls }
        }
        guard let media, !media.isEmpty else { return nil }
        var segments = initURL.map { [DASHSegment(url: $0, duration: nil, isInitialization: true)] } ?? []
        var seen = Set(segments.map(\.url))
        // SegmentURLs that are ranges of one file are one object.
        for url in media where seen.insert(url).inserted {
            segments.append(DASHSegment(url: url, duration: duration))
        }
        return segments
    }

    // MARK: Values

    /// `a + b`, nil on overflow.
    static func sum(_ a: UInt64, _ b: UInt64) -> UInt64? {
        let (s, overflow) = a.addingReportingOverflow(b)
        return overflow ? nil : s
    }

    /// `a / b` rounded up (`b > 0`).
    static func ceilDiv(_ a: UInt64, _ b: UInt64) -> UInt64 {
        a / b + (a % b == 0 ? 0 : 1)
    }

    /// A non-negative decimal integer attribute.
    static func integer(_ value: [UInt8]) -> UInt64? {
        let trimmed = DASHReferenceWriter.trimmed(value[...])
        guard !trimmed.isEmpty, trimmed.count <= 19, trimmed.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return trimmed.reduce(0) { $0 * 10 + UInt64($1 - 0x30) }
    }

    /// An xs:dateTime (`2026-11-24T13:00:00Z`, `...T13:00:00.5+01:00`; no zone is UTC, as
    /// players take it) in seconds since 1970. Nil for anything else or an impossible date.
    static func epochSeconds(_ value: [UInt8]) -> Double? {
        let b = Array(DASHReferenceWriter.trimmed(value[...]))
        func number(_ at: Int, _ digits: Int) -> Int? {
            guard at + digits <= b.count else { return nil }
            var n = 0
            for c in b[at..<(at + digits)] {
                guard c >= 0x30 && c <= 0x39 else { return nil }
                n = n * 10 + Int(c - 0x30)
            }
            return n
        }
        func separator(_ at: Int, _ c: Character) -> Bool { at < b.count && b[at] == c.asciiValue! }
        guard b.count >= 19, let year = number(0, 4), separator(4, "-"), let month = number(5, 2), separator(7, "-"),
            let day = number(8, 2), separator(10, "T"), let hour = number(11, 2), separator(13, ":"),
            let minute = number(14, 2), separator(16, ":"), let second = number(17, 2),
            (1...12).contains(month), hour < 24, minute < 60, second < 61
        else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let monthDays = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        guard (1...monthDays).contains(day) else { return nil }
        var i = 19
        var fraction = 0.0
        if separator(i, ".") {
            var scale = 0.1
            i += 1
            let start = i
            while i < b.count, b[i] >= 0x30 && b[i] <= 0x39 {
                fraction += Double(b[i] - 0x30) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        var zone = 0
        if separator(i, "Z") {
            i += 1
        } else if separator(i, "+") || separator(i, "-") {
            guard let h = number(i + 1, 2), separator(i + 3, ":"), let m = number(i + 4, 2), h <= 14, m < 60 else { return nil }
            zone = (h * 3600 + m * 60) * (b[i] == UInt8(ascii: "+") ? 1 : -1)
            i += 6
        }
        guard i == b.count else { return nil }
        // Days from 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return Double(days * 86_400 + hour * 3600 + minute * 60 + second - zone) + fraction
    }

    /// An xs:duration without years or months (`PT1H2M3.5S`, `P1DT2H`; zero years and months
    /// are allowed), in seconds. Units in order, each at most once; fractions on seconds only.
    static func seconds(_ value: [UInt8]) -> Double? {
        var text = Substring(String(decoding: DASHReferenceWriter.trimmed(value[...]), as: UTF8.self))
        guard text.first == "P" else { return nil }
        text = text.dropFirst()
        // Y M D, then T, then H M S: each unit's rank must exceed the last one's.
        let dateRanks: [Character: Int] = ["Y": 0, "M": 1, "D": 2]
        let timeRanks: [Character: Int] = ["H": 4, "M": 5, "S": 6]
        var total = 0.0
        var last = -1
        var inTime = false
        var number = ""
        var units = 0
        var unitsAfterT = 0
        for c in text {
            switch c {
            case "T":
                guard !inTime, number.isEmpty else { return nil }
                inTime = true
                last = 3
            case "0"..."9", ".":
                number.append(c)
            default:
                guard let rank = (inTime ? timeRanks : dateRanks)[c], rank > last, let n = Double(number) else { return nil }
                guard c == "S" || !number.contains(".") else { return nil }
                switch rank {
                case 0, 1: guard n == 0 else { return nil }  // a calendar length has no fixed seconds
                case 2: total += n * 86_400
                case 4: total += n * 3_600
                case 5: total += n * 60
                default: total += n
                }
                last = rank
                number = ""
                units += 1
                if inTime { unitsAfterT += 1 }
            }
        }
        guard units > 0, number.isEmpty, !inTime || unitsAfterT > 0, total.isFinite else { return nil }
        return total
    }
}

/// What listing one MPD's segments may still spend, and what it has read once for all the
/// Representations that inherit it.
struct ListingWork {
    /// Segments (and SegmentList children) still to work out, listed or not: Representations
    /// that each fail late (thousands inheriting one timeline) cannot multiply the work.
    var segments = DASHRewriteRun.maxListedSegments
    /// URL bytes still to build.
    var bytes = 64 << 20
    /// Each timeline read once, by element.
    private var entries: [Int32: SegmentTimelineEntries?] = [:]
    /// Each segment element's SegmentTimeline and Initialization children, looked up once.
    private var timelines: [Int32: MPDNode?] = [:]
    private var initializations: [Int32: [UInt8]?] = [:]

    /// Each timeline's live tail, by element and timing (`liveTail`).
    private var tails: [String: [(index: UInt64, time: UInt64, duration: UInt64)]?] = [:]

    /// The newest `keep` segments of `timeline` (index from the first, media time, duration)
    /// whole before `liveEnd` (when known) and within `periodEnd`: its entries walked once per
    /// timing, one unit of the bound each, a run of repeats skipped to its end. Nil when the
    /// timeline cannot be read or the bound ends before its end (an old tail is no tail).
    mutating func liveTail(
        of timeline: MPDNode, liveEnd: UInt64?, periodEnd: UInt64?, lastIndex: UInt64?, keep: Int
    ) -> [(index: UInt64, time: UInt64, duration: UInt64)]? {
        let key = [liveEnd, periodEnd, lastIndex].reduce("\(timeline.index)") { $0 + " " + ($1.map(String.init) ?? "-") }
        if let known = tails[key] { return known }
        let tail = walkTail(timeline, liveEnd: liveEnd, periodEnd: periodEnd, lastIndex: lastIndex, keep: UInt64(keep))
        tails[key] = .some(tail)
        return tail
    }

    /// The newest `keep` segments of `timeline` available before `liveEnd`, up to the one at
    /// `lastIndex` (from `@endNumber`) at most.
    private mutating func walkTail(
        _ timeline: MPDNode, liveEnd: UInt64?, periodEnd: UInt64?, lastIndex: UInt64?, keep: UInt64
    ) -> [(index: UInt64, time: UInt64, duration: UInt64)]? {
        guard let entries = entries(of: timeline) else { return nil }
        var times: [(index: UInt64, time: UInt64, duration: UInt64)] = []
        var t: UInt64 = 0
        var index: UInt64 = 0
        for (i, s) in entries.items.enumerated() {
            guard segments > 0 else { return nil }
            segments -= 1
            if let start = s.t { t = start }
            guard var count = DASHRewriteRun.count(s, at: i, t: t, in: entries, liveEnd: liveEnd, periodEnd: periodEnd) else { return nil }
            if let lastIndex {
                guard index <= lastIndex else { break }
                count = min(count, lastIndex - index + 1)
            }
            if count > keep {
                let (skipped, overflow) = (count - keep).multipliedReportingOverflow(by: s.d)
                guard !overflow, let later = DASHRewriteRun.sum(t, skipped), let nextIndex = DASHRewriteRun.sum(index, count - keep) else { return nil }
                (t, index, count) = (later, nextIndex, keep)
            }
            for _ in 0..<count {
                times.append((index, t, s.d))
                guard let next = DASHRewriteRun.sum(t, s.d), let nextIndex = DASHRewriteRun.sum(index, 1) else { return nil }
                (t, index) = (next, nextIndex)
            }
            if times.count > 2 * Int(keep) { times.removeFirst(times.count - Int(keep)) }
            // Entries after the edge are not available yet.
            if let liveEnd, t >= liveEnd { break }
        }
        return Array(times.suffix(Int(keep)))
    }

    mutating func entries(of timeline: MPDNode) -> SegmentTimelineEntries? {
        if let known = entries[timeline.index] { return known }
        let read = SegmentTimelineEntries(timeline)
        entries[timeline.index] = .some(read)
        return read
    }

    /// The SegmentTimeline of the innermost element of `chain` that has one.
    mutating func timeline(_ chain: [MPDNode]) -> MPDNode? {
        for node in chain {
            if timelines[node.index] == nil { timelines[node.index] = .some(Self.child(of: node) { $0.hasLocalName("SegmentTimeline") }) }
            if let found = timelines[node.index] ?? nil { return found }
        }
        return nil
    }

    /// The initialization URL from the innermost element of `chain` that gives one, as
    /// `@initialization` or as an `Initialization` child.
    mutating func initialization(_ chain: [MPDNode]) -> [UInt8]? {
        for node in chain {
            if let value = node.attribute("initialization") { return value }
            if initializations[node.index] == nil {
                initializations[node.index] = .some(Self.child(of: node) { SegmentItem.childKind($0) == 0 }.flatMap { $0.attribute("sourceURL") })
            }
            if let value = initializations[node.index] ?? nil { return value }
        }
        return nil
    }

    static func child(of node: MPDNode, where matches: (MPDNode) -> Bool) -> MPDNode? {
        var found: MPDNode?
        try? node.forEachElementChild { child in
            if found == nil, matches(child) { found = child }
        }
        return found
    }
}

/// A SegmentTemplate URL split at its identifiers (ISO/IEC 23009-1 5.3.9.4.4).
struct SegmentTemplateURL {
    enum Part {
        case literal(String)
        case number(width: Int)
        case time(width: Int)
        case bandwidth(width: Int)
        case representationID
    }

    let parts: [Part]

    /// Nil for an identifier it does not know (`$SubNumber$`...) or a malformed one.
    init?(_ template: String) {
        var parts: [Part] = []
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "$") {
            if open > rest.startIndex { parts.append(.literal(String(rest[..<open]))) }
            let afterOpen = rest.index(after: open)
            guard let close = rest[afterOpen...].firstIndex(of: "$") else { return nil }
            let token = rest[afterOpen..<close]
            rest = rest[rest.index(after: close)...]
            if token.isEmpty {
                parts.append(.literal("$"))
                continue
            }
            let name = token.prefix { $0 != "%" }
            var width = 1
            if name.count < token.count {
                // %0Nd
                let format = token.dropFirst(name.count)
                guard format.hasPrefix("%0"), format.hasSuffix("d"), let w = Int(format.dropFirst(2).dropLast()), (1...32).contains(w) else { return nil }
                width = w
            }
            switch name {
            case "Number": parts.append(.number(width: width))
            case "Time": parts.append(.time(width: width))
            case "Bandwidth": parts.append(.bandwidth(width: width))
            case "RepresentationID" where width == 1 && name.count == token.count: parts.append(.representationID)
            default: return nil
            }
        }
        if !rest.isEmpty { parts.append(.literal(String(rest))) }
        self.parts = parts
    }

    var usesTime: Bool { parts.contains { if case .time = $0 { true } else { false } } }
    var usesNumberOrTime: Bool {
        parts.contains {
            switch $0 {
            case .number, .time: true
            default: false
            }
        }
    }

    /// The URL of one segment; nil when it needs a value the Representation lacks.
    func url(number: UInt64, time: UInt64, representationID: String?, bandwidth: UInt64?) -> String? {
        var out = ""
        for part in parts {
            switch part {
            case .literal(let s): out += s
            case .number(let w): out += Self.padded(number, w)
            case .time(let w): out += Self.padded(time, w)
            case .bandwidth(let w):
                guard let bandwidth else { return nil }
                out += Self.padded(bandwidth, w)
            case .representationID:
                guard let representationID else { return nil }
                out += representationID
            }
        }
        return out
    }

    static func padded(_ n: UInt64, _ width: Int) -> String {
        let digits = String(n)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

/// The `S` entries of a SegmentTimeline, read from its bytes (the scanner keeps no record of
/// them: a timeline can hold thousands).
struct SegmentTimelineEntries {
    struct Entry {
        var t: UInt64?
        var d: UInt64
        /// Repeats after the first; -1: up to the next `t` or the Period's end.
        var r: Int
    }

    let items: [Entry]

    /// Nil when an `S` lacks `@d` or has a value that is not a plain number.
    init?(_ timeline: MPDNode) {
        let element = timeline.element
        guard !element.isEmpty, !element.isShallow, element.edits < 0 else {
            self.items = []
            return
        }
        let bytes = timeline.doc.bytes
        var items: [Entry] = []
        var i = element.tagClose + 1
        let end = element.contentEnd
        while i < end {
            guard let lt = bytes[i..<end].firstIndex(of: UInt8(ascii: "<")) else { break }
            guard lt + 1 < end else { break }
            let next = bytes[lt + 1]
            if next == UInt8(ascii: "!") || next == UInt8(ascii: "?") || next == ASCII.slash {
                // A comment, CDATA section, processing instruction or end tag: skipped whole.
                let rest = bytes[(lt + 1)..<end]
                let close: [UInt8] =
                    rest.starts(with: "!--".utf8) ? Array("-->".utf8)
                    : rest.starts(with: "![CDATA[".utf8) ? Array("]]>".utf8)
                    : next == UInt8(ascii: "?") ? Array("?>".utf8) : [UInt8(ascii: ">")]
                // Searched for after the opening (`<!-->` does not close a comment).
                let opening = rest.starts(with: "!--".utf8) ? 4 : rest.starts(with: "![CDATA[".utf8) ? 9 : 2
                i = Self.after(close, in: bytes, from: min(lt + opening, end), to: end)
                continue
            }
            // A start tag: its name, then attributes up to `>` outside quotes.
            var j = lt + 1
            while j < end, !Self.isNameEnd(bytes[j]) { j += 1 }
            let qname = bytes[(lt + 1)..<j]
            let local = qname.lastIndex(of: UInt8(ascii: ":")).map { qname[($0 + 1)...] } ?? qname
            var attributes: [(name: ArraySlice<UInt8>, value: ArraySlice<UInt8>)] = []
            while j < end, bytes[j] != UInt8(ascii: ">") {
                if bytes[j] == ASCII.slash || bytes[j] <= 0x20 {
                    j += 1
                    continue
                }
                let nameStart = j
                while j < end, bytes[j] != UInt8(ascii: "="), bytes[j] > 0x20 { j += 1 }
                let name = bytes[nameStart..<j]
                while j < end, bytes[j] != ASCII.quote, bytes[j] != UInt8(ascii: "'") { j += 1 }
                guard j < end else { return nil }
                let quote = bytes[j]
                let valueStart = j + 1
                guard let close = bytes[valueStart..<end].firstIndex(of: quote) else { return nil }
                attributes.append((name, bytes[valueStart..<close]))
                j = close + 1
            }
            i = j + 1
            guard local.elementsEqual("S".utf8) else { continue }
            var entry = Entry(t: nil, d: 0, r: 0)
            var hasD = false
            // Only unprefixed attributes are the S's own (`xmlns:…`, extensions are not).
            for (name, value) in attributes {
                if name.elementsEqual("t".utf8) {
                    guard let v = DASHRewriteRun.integer(Array(value)) else { return nil }
                    entry.t = v
                } else if name.elementsEqual("d".utf8) {
                    guard let v = DASHRewriteRun.integer(Array(value)) else { return nil }
                    entry.d = v
                    hasD = true
                } else if name.elementsEqual("r".utf8) {
                    let text = DASHReferenceWriter.trimmed(value)
                    if text.elementsEqual("-1".utf8) {
                        entry.r = -1
                    } else {
                        // As written (a static listing stops at its bound; a live tail skips
                        // to the end of the repeats).
                        guard let v = DASHRewriteRun.integer(Array(text)) else { return nil }
                        entry.r = Int(min(v, UInt64(Int.max)))
                    }
                }
            }
            guard hasD else { return nil }
            items.append(entry)
        }
        self.items = items
    }

    /// The index after the first `marker` in `bytes[from..<end]`, else `end`.
    static func after(_ marker: [UInt8], in bytes: [UInt8], from: Int, to end: Int) -> Int {
        var j = from
        while j + marker.count <= end {
            if bytes[j..<(j + marker.count)].elementsEqual(marker) { return j + marker.count }
            j += 1
        }
        return end
    }

    static func isNameEnd(_ b: UInt8) -> Bool {
        b <= 0x20 || b == UInt8(ascii: ">") || b == ASCII.slash
    }
}

/// The MPD values the segment listing reads, for callers that read them too.
public enum DASHSegmentListing {
    /// An xs:duration without years or months (`PT1H2M3.5S`, `P1DT2H`), in seconds; nil for
    /// anything else.
    public static func seconds(_ text: String) -> Double? {
        DASHRewriteRun.seconds(Array(text.utf8))
    }

    /// An xs:dateTime (`MPD@availabilityStartTime`) in seconds since 1970; nil for anything else.
    public static func epochSeconds(_ text: String) -> Double? {
        DASHRewriteRun.epochSeconds(Array(text.utf8))
    }
}
