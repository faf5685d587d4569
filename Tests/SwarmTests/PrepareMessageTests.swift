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
        // 11,000 objects, each with a 300-byte token: over both the count and the size bound.
        let all = refs(11_000, query: 300)
        let messages = SwarmMessage.prepares(all, whole: true)
        #expect(messages.count >= 2)
        #expect(messages.allSatisfy { $0.json.utf8.count <= SwarmMessage.maxTrackerMessageSize && $0.count <= SwarmMessage.maxPrepareRefs })
        #expect(messages.allSatisfy { SwarmMessage(json: $0.json)?.whole == true })
        let sent = decoded(messages)
        #expect(sent.map(\.count) == messages.map(\.count))
        #expect(sent.flatMap { $0 }.map(\.url) == all.map(\.url))
    }

    @Test func aReadAheadListIsCutToItsFirstMessage() {
        let all = refs(12_000)
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
    /// Lists just past one message (by count, or by bytes for long tokens): JSON encoding in
    /// a debug build is slow, and the suite shares two cores.
    @Test(arguments: [(0, 12_000, 5_000), (300, 6_000, 1_250), (2_000, 1_200, 312)])
    func aLongListsPartsEachFitOneMessage(tokenLength: Int, count: Int, expectedHalf: Int) {
        let all = refs(count, query: tokenLength)
        let half = SwarmMessage.readAheadHalfSize(all)
        #expect(half == expectedHalf, "halves on a grid of 5,000 / 2^k")
        let plan = SwarmMessage.prepares(all, whole: false)
        #expect(plan.count == 1 && plan[0].count >= 2 * half, "the plan holds halves 0 and 1: \(plan.first?.count ?? 0)")
        // The first part, one in the middle and the last (each is JSON-encoded: all of them
        // would hold a thread of the suite's two for tens of seconds in a debug build).
        let starts = Array(stride(from: half, to: all.count, by: half))
        for start in [starts[0], starts[starts.count / 2], starts[starts.count - 1]] {
            let part = SwarmMessage.readAheadPart(halfSize: half, count: all.count, at: start)
            #expect(part?.lowerBound == start)
            guard let part else { continue }
            #expect(part.count == min(2 * half, all.count - start))
            let sent = SwarmMessage.prepares(Array(all[part]), whole: false)
            #expect(sent.count == 1 && sent[0].count == part.count, "halves from \(start) in one message")
        }
    }

    /// Players whose tokens differ a little (a per-viewer signature) name the same parts.
    @Test func tokensOfAnotherLengthGiveTheSameHalves() {
        #expect(SwarmMessage.readAheadHalfSize(refs(6_000, query: 290)) == SwarmMessage.readAheadHalfSize(refs(6_000, query: 310)))
    }

    @Test func aPlayerIsSentThePartItsWindowLiesIn() {
        let count = 25_000
        let half = SwarmMessage.readAheadHalfSize(refs(count))
        #expect(half == 5_000, "short URLs: halves of 5,000 objects")
        // The plan covers half 0 (and 1): nothing to send there.
        #expect(SwarmMessage.readAheadPart(halfSize: half, count: count, at: 0) == nil)
        #expect(SwarmMessage.readAheadPart(halfSize: half, count: count, at: 4_999) == nil)
        #expect(SwarmMessage.readAheadPart(halfSize: half, count: count, at: 5_000) == 5_000..<15_000)
        // A player near the end of its half has the next one in its part.
        #expect(SwarmMessage.readAheadPart(halfSize: half, count: count, at: 14_999) == 10_000..<20_000)
        #expect(SwarmMessage.readAheadPart(halfSize: half, count: count, at: 24_999) == 20_000..<25_000)
        #expect(SwarmMessage.readAheadPart(halfSize: half, count: count, at: 25_000) == nil)
        // A list that goes in one message has no parts.
        #expect(SwarmMessage.readAheadHalfSize(refs(10_000)) == 0)
        #expect(SwarmMessage.readAheadPart(halfSize: 0, count: 10_000, at: 9_999) == nil)
    }

    /// A node's `have` (all it holds, at each login) and `lost` go in messages of at most
    /// `maxObjectIDs` ids, each well within what a tracker reads, in order.
    @Test func objectListsGoInMessagesWithinTheBound() {
        let ids = refs(45_001).map(\.key.id)
        let messages = SwarmMessage.objectLists("have", ids, whole: true)
        #expect(messages.map { $0.objects?.count ?? 0 } == [20_000, 20_000, 5_001])
        #expect(messages.flatMap { SwarmMessage(json: $0.json)?.objects ?? [] } == ids)
        #expect(messages.allSatisfy { $0.type == "have" && $0.whole == true && $0.json.utf8.count < SwarmMessage.maxTrackerMessageSize / 2 })
        #expect(SwarmMessage.objectLists("lost", []).isEmpty, "nothing to say: no message")
        #expect(SwarmMessage.objectLists("lost", [ids[0]]).first?.whole == nil)
    }
}
