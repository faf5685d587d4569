import PieceStore
import Swarm
import Testing

/// `prepare` messages within what a tracker reads: `SwarmMessage.prepares`.
@Suite("Prepare messages")
struct PrepareMessageTests {
    func refs(_ count: Int, query: Int = 0) -> [ObjectRef] {
        let token = String(repeating: "t", count: query)
        return (0..<count).map {
            ObjectRef(key: ObjectKey(xresid: "long", host: "cdn.example.com", path: "/long/\($0).ts"), url: "https://cdn.example.com/long/\($0).ts?token=\(token)")
        }
    }

    func decoded(_ messages: [(message: SwarmMessage, json: String, count: Int)]) -> [[ObjectRef]] {
        messages.map { SwarmMessage(json: $0.json)?.refs ?? [] }
    }

    @Test func aWholePrepareGoesInSeveralMessagesInOrder() {
        // 25,000 objects, each with a 300-byte token: over both the count and the size bound.
        let all = refs(25_000, query: 300)
        let messages = SwarmMessage.prepares(all, whole: true)
        #expect(messages.count > 2)
        #expect(messages.allSatisfy { $0.json.utf8.count <= SwarmMessage.maxTrackerMessageSize && $0.count <= SwarmMessage.maxPrepareRefs })
        #expect(messages.allSatisfy { SwarmMessage(json: $0.json)?.whole == true })
        let sent = decoded(messages)
        #expect(sent.map(\.count) == messages.map(\.count))
        #expect(sent.flatMap { $0 }.map(\.url) == all.map(\.url))
    }

    @Test func aReadAheadListIsCutToItsFirstMessage() {
        let all = refs(25_000)
        let messages = SwarmMessage.prepares(all, whole: false)
        #expect(messages.count == 1)
        #expect(decoded(messages)[0].map(\.url) == all.prefix(SwarmMessage.maxPrepareRefs).map(\.url))
        #expect(SwarmMessage(json: messages[0].json)?.whole == nil)
        // A short one goes whole, as it is.
        let short = refs(3)
        #expect(decoded(SwarmMessage.prepares(short, whole: false)).flatMap { $0 }.map(\.url) == short.map(\.url))
    }

    @Test func anObjectTooLargeForAnyMessageIsLeftOut() {
        var list = refs(3)
        list[1].url += String(repeating: "x", count: SwarmMessage.maxTrackerMessageSize)
        let messages = SwarmMessage.prepares(list, whole: true)
        #expect(decoded(messages).flatMap { $0 }.map(\.key.path) == ["/long/0.ts", "/long/2.ts"])
        #expect(SwarmMessage.prepares([], whole: true).isEmpty)
    }

    /// A list longer than one message reaches the tracker in parts as players go on: any
    /// two neighbouring halves go in one message, and the plan's first message holds the first
    /// two, so every position is in a part that reaches the tracker whole.
    @Test(arguments: [0, 300, 2000])
    func aLongListsPartsEachFitOneMessage(tokenLength: Int) {
        let all = refs(43_200, query: tokenLength)
        let halves = SwarmMessage.readAheadHalves(all)
        #expect(halves.first == 0)
        #expect(zip(halves, halves.dropFirst()).allSatisfy { $0 < $1 }, "consecutive and not empty")
        #expect(halves.count >= 8, "43,200 objects are at least eight halves of 5,000: \(halves.count)")
        let plan = SwarmMessage.prepares(all, whole: false)
        #expect(plan.count == 1 && plan[0].count >= halves[2], "the plan holds halves 0 and 1")
        for j in 1..<halves.count {
            let part = SwarmMessage.readAheadPart(halves: halves, count: all.count, at: halves[j])
            let expected = halves[j]..<(j + 2 < halves.count ? halves[j + 2] : all.count)
            #expect(part == expected)
            let sent = SwarmMessage.prepares(Array(all[expected]), whole: false)
            #expect(sent.count == 1 && sent[0].count == expected.count, "half \(j) and the next in one message")
        }
    }

    @Test func aPlayerIsSentThePartItsWindowLiesIn() {
        let all = refs(25_000)
        let halves = SwarmMessage.readAheadHalves(all)
        #expect(halves == [0, 5_000, 10_000, 15_000, 20_000], "short URLs: halves of 5,000 objects")
        // The plan covers half 0 (and 1): nothing to send there.
        #expect(SwarmMessage.readAheadPart(halves: halves, count: all.count, at: 0) == nil)
        #expect(SwarmMessage.readAheadPart(halves: halves, count: all.count, at: 4_999) == nil)
        #expect(SwarmMessage.readAheadPart(halves: halves, count: all.count, at: 5_000) == 5_000..<15_000)
        // A player near the end of its half has the next one in its part.
        #expect(SwarmMessage.readAheadPart(halves: halves, count: all.count, at: 14_999) == 10_000..<20_000)
        #expect(SwarmMessage.readAheadPart(halves: halves, count: all.count, at: 24_999) == 20_000..<25_000)
        #expect(SwarmMessage.readAheadPart(halves: halves, count: all.count, at: 25_000) == nil)
        // A list that goes in one message has no parts.
        #expect(SwarmMessage.readAheadHalves(refs(10_000)).isEmpty)
        #expect(SwarmMessage.readAheadPart(halves: [], count: 10_000, at: 9_999) == nil)
    }
}
