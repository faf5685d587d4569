import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// The responses being sent, so that a stop lets them end. A stop (SIGTERM) quiesces the HTTP
/// server, which closes a connection once its response's end is written, dropping what the
/// channel still buffered (up to a batch of pieces), and does not wait for connections that
/// are still sending: a large object's response to a player was cut at a stop, and a restart
/// or a deploy cut its viewers' downloads.
public final class InFlightResponses: Sendable {
    private struct State {
        var stopping = false
        /// The channels of the responses that ended last (weakly held), which may still buffer
        /// their ends: a stop waits for those.
        var ended: [WeakChannel?] = Array(repeating: nil, count: InFlightResponses.endedKept)
        var next = 0
        /// The responses being made and sent, by token (their count: the responses not yet done).
        var sending: [ObjectIdentifier: WeakToken] = [:]
    }

    /// A token held weakly.
    struct WeakToken {
        weak var token: Token?
    }

    /// A channel held weakly: a closed one is let go.
    struct WeakChannel {
        weak var channel: (any Channel)?
    }

    /// Channels of ended responses kept for a stop to look at.
    static let endedKept = 4096

    private let state = Mutex(State())

    public init() {}

    /// Held by a response while it is made and sent: a body that streams captures it
    /// (`GatewayResponder.sending`), and it is released with the body once the server is done
    /// with it, sent or not; its channel is then kept for a stop to look at (it may still
    /// buffer the response's end).
    public final class Token: Sendable {
        private let owner: InFlightResponses
        fileprivate let channel: (any Channel)?
        /// What a stop calls to end the work on the response when its time is up.
        private let cutHandler = Mutex<(@Sendable () -> Void)?>(nil)

        /// Has a stop call `handler` if the response is still in flight when its time is up
        /// (the work that makes it may wait on an origin, past the channel's close); nil
        /// forgets it (it may hold what holds this token).
        public func onCut(_ handler: (@Sendable () -> Void)?) { cutHandler.withLock { $0 = handler } }

        fileprivate func cut() {
            channel?.close(promise: nil)
            cutHandler.withLock { $0 }?()
        }

        fileprivate init(_ owner: InFlightResponses, _ channel: (any Channel)?) {
            self.owner = owner
            self.channel = channel
        }

        deinit {
            let channel = channel
            let me = ObjectIdentifier(self)
            owner.state.withLock { s in
                s.sending[me] = nil
                guard let channel else { return }
                s.ended[s.next] = WeakChannel(channel: channel)
                s.next = (s.next + 1) % InFlightResponses.endedKept
            }
        }
    }

    /// A token for a response that begins now on `channel` (during a stop too: the server
    /// still answers until the responses end, and one it began would be cut as the others were).
    public func begin(on channel: (any Channel)?) -> Token {
        let token = Token(self, channel)
        state.withLock { $0.sending[ObjectIdentifier(token)] = WeakToken(token: token) }
        return token
    }

    /// Responses not yet done.
    public var count: Int { state.withLock { $0.sending.count } }

    /// Whether the stop has begun.
    public var isStopping: Bool { state.withLock { $0.stopping } }

    /// Waits until `channel` buffers nothing for its socket, or is closed, `limit` at most:
    /// whether it still buffers bytes then.
    static func stillBuffers(_ channel: any Channel, after limit: Duration) async -> Bool {
        let end = ContinuousClock.now + limit
        var pause = Duration.milliseconds(5)
        while let buffered = try? await channel.getOption(.bufferedWritableBytes).get(), buffered > 0, channel.isActive {
            guard ContinuousClock.now < end else { return true }
            // Cancelled: a stop at once, which closes it.
            do { try await Task.sleep(for: pause) } catch { return true }
            pause = min(pause * 2, .milliseconds(100))
        }
        return false
    }

    /// Marks the stop, then waits until no response is being written and the channels of
    /// those written have handed what they buffered to their sockets, `limit` at most. The
    /// connections of the responses left then (being written, or buffered: a player that
    /// stopped reading) are closed, and the work on those still being made is cancelled (it
    /// may wait on an origin for its own timeout, up to two minutes): the server's stop waits
    /// for every connection and every handler to end, and one such player held it for good.
    /// Returns how many responses were left. Cancelled (a second signal: stop at once), it
    /// waits no more: what is left is closed and cut now.
    func drain(within limit: Duration) async -> Int {
        state.withLock { $0.stopping = true }
        let end = ContinuousClock.now + limit
        while count > 0 && ContinuousClock.now < end {
            // Not `try?`: a cancelled sleep throws at once, and the loop spun a thread at full
            // speed until the limit.
            do { try await Task.sleep(for: .milliseconds(20)) } catch { break }
        }
        let written = state.withLock { s in s.ended.compactMap { $0?.channel }.filter(\.isActive) }
        var left = count
        let buffersEnd = Task.isCancelled ? ContinuousClock.now : end
        for channel in written where await Self.stillBuffers(channel, after: buffersEnd - ContinuousClock.now) {
            left += 1
            channel.close(promise: nil)
        }
        for token in state.withLock({ s in s.sending.values.compactMap(\.token) }) { token.cut() }
        return left
    }
}

/// A service placed after the HTTP server in its group, so that a graceful stop reaches it
/// first: it holds the server's quiescing back until the responses in flight are sent, their
/// channels' buffers too (20 s at most, within the systemd unit's 30 s stop).
struct ResponseDrain: Service {
    let responses: InFlightResponses
    let limit: Duration
    let logger: Logger

    func run() async throws {
        // Returns at the stop (or throws when the group is cancelled: nothing to wait for).
        try await gracefulShutdown()
        let waiting = responses.count
        if waiting > 0 { logger.info("stopping: letting the responses in flight end", metadata: ["responses": "\(waiting)"]) }
        // With none in flight too: one that ended just before may still be in its channel.
        let left = await responses.drain(within: limit)
        if left > 0 {
            logger.warning("stopping with responses still in flight: their connections are closed", metadata: ["responses": "\(left)", "waited": "\(limit)"])
        }
    }
}

