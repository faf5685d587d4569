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
}
