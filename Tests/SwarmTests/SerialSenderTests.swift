import Swarm
import Synchronization
import Testing

/// `SerialSender` over a write that takes its time: a fault a real socket shows only now and
/// then (a frame of one message written between the frames of another), made certain here.
@Suite("Serial sender")
struct SerialSenderTests {
    /// What the write saw: "<" then ">" around each message, and the order of messages.
    final class Log: Sendable {
        let events = Mutex<[String]>([])
        func add(_ e: String) { events.withLock { $0.append(e) } }
    }

    @Test func writesNeverOverlapAndKeepTheirOrder() async throws {
        let log = Log()
        let sender = SerialSender { text in
            log.add("<" + text)
            try await Task.sleep(for: .milliseconds(1))  // a write that suspends, as a socket's does
            log.add(">" + text)
        }
        // From one task, one after another without waiting: handed over in order.
        async let ordered: Void = {
            for i in 0..<20 { try await sender.send("a\(i)") }
        }()
        // From many tasks at once.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<30 { group.addTask { try await sender.send("b\(i)") } }
            try await group.waitForAll()
        }
        try await ordered
        let events = log.events.withLock { $0 }
        #expect(events.count == 100)
        for pair in stride(from: 0, to: events.count, by: 2) {
            #expect(events[pair].hasPrefix("<") && events[pair + 1] == ">" + events[pair].dropFirst(), "\(events[pair]) was interrupted by \(events[pair + 1])")
        }
        let a = events.filter { $0.hasPrefix("<a") }.map { Int($0.dropFirst(2))! }
        #expect(a == Array(0..<20))
    }

    struct Refused: Error {}

    @Test func aFailedWriteFailsItsSendOnly() async throws {
        let sender = SerialSender { text in if text == "bad" { throw Refused() } }
        await #expect(throws: Refused.self) { try await sender.send("bad") }
        try await sender.send("good")
    }
}
