import Synchronization

/// Sends a connection's messages one at a time, in the order they were handed over. A message
/// larger than a WebSocket frame (16 KiB; a peer closes the connection on a larger one) goes
/// out as several frames, and a frame of another message written between them would corrupt
/// it: every message to a node or to the tracker goes through one of these.
public final class SerialSender: Sendable {
    private let write: @Sendable (String) async throws -> Void
    /// The last write handed over: the next one starts when it has ended.
    private let tail = Mutex<Task<Result<Void, any Error>, Never>?>(nil)

    public init(_ write: @escaping @Sendable (String) async throws -> Void) {
        self.write = write
    }

    /// Writes `text` after every message handed over before it; throws what its write threw.
    public func send(_ text: String) async throws {
        let write = self.write
        let mine = tail.withLock { tail -> Task<Result<Void, any Error>, Never> in
            let previous = tail
            let task = Task { () -> Result<Void, any Error> in
                _ = await previous?.value
                do {
                    try await write(text)
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
            tail = task
            return task
        }
        try await mine.value.get()
    }
}
