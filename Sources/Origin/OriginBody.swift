/// A response body as an async sequence of byte chunks, read once. It streams with
/// backpressure: at most the client's `bodyBufferSize` (plus one chunk) waits for the reader;
/// past that libcurl pauses the transfer until the reader catches up. Cancelling the reading
/// task, or dropping the body, aborts the transfer. A body that ends early (reset, short)
/// throws instead of ending cleanly.
public struct OriginBody: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    public typealias Failure = OriginError

    let stream: BodyStream

    init(_ transfer: Transfer) {
        stream = BodyStream(transfer)
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(stream: stream)
    }

    /// Reads the whole body; `.tooLarge` past `limit` bytes (the transfer is aborted).
    public func collect(upTo limit: Int) async throws(OriginError) -> [UInt8] {
        var out: [UInt8] = []
        var it = makeAsyncIterator()
        while let chunk = try await it.next() {
            guard out.count + chunk.count <= limit else {
                stream.transfer.abandon()
                throw OriginError(.tooLarge, "body larger than \(limit) bytes")
            }
            out += chunk
        }
        return out
    }

    /// The most bytes that were buffered for the reader at once (for tests of backpressure).
    var bufferHighWater: Int { stream.transfer.bufferHighWater }

    /// Reads chunks in order; after an error or the end it returns nil.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let stream: BodyStream
        var finished = false

        public mutating func next() async throws(OriginError) -> [UInt8]? {
            guard !finished else { return nil }
            return try take(await stream.transfer.nextChunk())
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(OriginError) -> [UInt8]? {
            guard !finished else { return nil }
            return try take(await stream.transfer.nextChunk())
        }

        private mutating func take(_ result: Result<[UInt8]?, OriginError>) throws(OriginError) -> [UInt8]? {
            switch result {
            case .success(let chunk?): return chunk
            case .success(nil):
                finished = true
                return nil
            case .failure(let error):
                finished = true
                throw error
            }
        }
    }
}

/// The one object behind a body and its iterators: when the last of them goes away, the
/// transfer is abandoned (aborted, if still running).
final class BodyStream: Sendable {
    let transfer: Transfer

    init(_ transfer: Transfer) {
        self.transfer = transfer
    }

    deinit {
        transfer.abandon()
    }
}
