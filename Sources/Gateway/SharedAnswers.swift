import Synchronization

/// An origin's whole answer, to hand to several requests.
struct CollectedAnswer: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var effectiveURL: String
    var body: [UInt8]
    /// Claimed by the first request served with it.
    let firstServed = OnceClaim()
}

/// True for the first `claim()` only.
final class OnceClaim: Sendable {
    private let taken = Atomic<Bool>(false)

    func claim() -> Bool { !taken.exchange(true, ordering: .relaxed) }
}

/// Hands out an origin body's chunks one at a time, after the first was peeked at.
final class ChunkIterator: @unchecked Sendable {
    // @unchecked: `next()` is only called by one consumer at a time — first the sniffing code,
    // then the unfolding stream, which calls its closure serially — so `iterator` is never
    // touched concurrently.
    private var iterator: AsyncThrowingStream<[UInt8], any Error>.AsyncIterator

    init(_ body: AsyncThrowingStream<[UInt8], any Error>) {
        iterator = body.makeAsyncIterator()
    }

    func next() async throws -> [UInt8]? {
        try await iterator.next()
    }
}
