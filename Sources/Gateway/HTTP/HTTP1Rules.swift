import HTTPTypes
import HummingbirdCore
import Glibc
import Logging
import NIOCore
import NIOHTTP1
import Origin

/// The parts of RFC 9112 that Hummingbird leaves to the application, applied to each request
/// head as it leaves the HTTP/1 decoder (the version and the raw `Host` lines are gone once
/// the head is an `HTTPRequest`):
/// - a request that does not ask to keep its connection (HTTP/1.0 without `keep-alive`, or
///   `Connection: close`) is answered and its connection closed (9.3): Hummingbird only
///   watched `Connection: close`, so an HTTP/1.0 client waited out the idle timeout for the
///   end of every body it had no length for, and every connection was held 60 s;
/// - an HTTP/1.1 request without a `Host`, or any request with more than one, is marked for
///   the responder to answer 400 (3.2); one in a transfer coding other than `chunked` alone,
///   501 (6.1), and its connection closed after; an HTTP/1.0 request with a
///   `Transfer-Encoding` has its connection closed after it (6.1: its framing is faulty). The mark is a header of this gateway's own, taken off
///   any request that arrives with it, so that the answer keeps its place among pipelined
///   requests.
/// - a request that says `Expect: 100-continue` is told to send its body at once (RFC 9110
///   10.1.1): its client waited a second for the answer (curl does, for a `/prepare` body
///   over 1 KiB);
/// - an HTTP/1.0 request's answer is an HTTP/1.0 one (6.1): one without a length (a body
///   streamed from the origin) is delimited by closing the connection, never chunked, which
///   an HTTP/1.0 client cannot read (the codec writes every head as HTTP/1.1); one with a
///   length says `Connection: keep-alive` when the request asked to keep its connection. Such
///   a body cut short (its origin broke off) ends with a reset, not a close that would read
///   as its end.
/// - an upgrade to anything but a WebSocket (`h2c`: curl `--http2`, Java's HttpClient on
///   `http://` URLs) is ignored (RFC 9110 7.8): the request is answered as it is, where the
///   upgradable server gave it an empty reply, and its connection closed after (the decoder
///   reads nothing more on a connection that asked for an upgrade: a request after it hung).
/// On an upgradable server, a request that asks for a WebSocket upgrade takes this handler off
/// its connection.
final class HTTP1Rules: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// The requests answered in order (pipelined ones wait their turn): whether each is
    /// HTTP/1.0, keeps its connection, and is a HEAD (whose answer has no body).
    private var requests: [(http10: Bool, keepAlive: Bool, head: Bool)] = []
    /// The answer being written ends with the connection (an HTTP/1.0 body without a length).
    private var closeAfterAnswer = false
    /// Such an answer ended: the connection's output is done, and what a later request's
    /// answer writes is dropped (appended, it would read as that body's end).
    private var outputDone = false

    /// The header that marks a request the responder must refuse, with the status and the
    /// reason (`400 more than one Host header`).
    static let refusalMark = "x-swarmgate-refuse"
    static let refusalField = HTTPField.Name(refusalMark)!

    /// Whether the connection may be upgraded (the tracker's WebSocket).
    let upgradable: Bool

    init(upgradable: Bool) {
        self.upgradable = upgradable
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = Self.unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        head.headers.remove(name: Self.refusalMark)
        if head.headers.contains(name: "upgrade") && !Self.asksForWebSocket(head) {
            head.headers.remove(name: "upgrade")
            let kept = head.headers["connection"].flatMap { HTTPList.members($0) }.filter { $0.lowercased() != "upgrade" }
            head.headers.remove(name: "connection")
            head.headers.add(name: "connection", value: (kept.map(String.init) + ["close"]).joined(separator: ", "))
        }
        let hosts = head.headers["host"].count  // lines, not values: an empty Host is one
        if hosts > 1 || (hosts == 0 && head.version != .http1_0) {
            head.headers.add(name: Self.refusalMark, value: hosts == 0 ? "400 an HTTP/1.1 request needs a Host header" : "400 more than one Host header")
        }
        let codings = head.headers["transfer-encoding"].flatMap { HTTPList.members($0) }.map { $0.lowercased() }
        if !codings.isEmpty {
            if codings != ["chunked"] && !head.headers.contains(name: Self.refusalMark) {
                head.headers.add(name: Self.refusalMark, value: "501 transfer coding \(codings.joined(separator: ", ")) is not supported")
            }
            if codings != ["chunked"] || head.version == .http1_0 { head.headers.replaceOrAdd(name: "connection", value: "close") }
        }
        if !head.isKeepAlive {
            head.headers.replaceOrAdd(name: "connection", value: "close")
        }
        requests.append((head.version == .http1_0, head.isKeepAlive, head.method == .HEAD))
        // Only when no earlier answer is still to come: a 100 must not land inside one.
        if requests.count == 1 && head.version != .http1_0 && !head.headers.contains(name: "upgrade")
            && head.headers["expect"].contains(where: { $0.trimmingASCIISpaces.lowercased() == "100-continue" })
        {
            context.writeAndFlush(Self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .continue))), promise: nil)
        }
        context.fireChannelRead(Self.wrapInboundOut(.head(head)))
        // A request that may be upgraded (the tracker's WebSocket) leaves the HTTP decoder
        // behind it: what follows is frames, not request parts, and reading them as parts
        // would stop the process. The connection goes on without these rules.
        if upgradable && Self.asksForWebSocket(head) {
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    static func asksForWebSocket(_ head: HTTPRequestHead) -> Bool {
        head.headers["upgrade"].contains { $0.lowercased().contains("websocket") }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !outputDone else {
            promise?.fail(ChannelError.outputClosed)
            return
        }
        switch Self.unwrapOutboundIn(data) {
        case .head(var head) where head.status.code >= 200:
            guard let request = requests.first, request.http10 else { break }
            head.version = .http1_0
            head.headers.remove(name: "transfer-encoding")
            let closing = head.headers["connection"].contains { $0.lowercased().contains("close") }
            if !head.headers.contains(name: "content-length") && head.status.mayHaveResponseBody && !request.head {
                closeAfterAnswer = true
                head.headers.replaceOrAdd(name: "connection", value: "close")
            } else if request.keepAlive && !closing {
                head.headers.replaceOrAdd(name: "connection", value: "keep-alive")
            }
            context.write(Self.wrapOutboundOut(.head(head)), promise: promise)
            return
        case .end:
            if !requests.isEmpty { requests.removeFirst() }
            if closeAfterAnswer {
                closeAfterAnswer = false
                outputDone = true
                let written = promise ?? context.eventLoop.makePromise()
                context.write(data, promise: written)
                // The body's end is the connection's: its output is shut once the body is
                // out, and what the client still sends is read, not reset (which could cut
                // the body's tail short at the client).
                written.futureResult.whenComplete { [channel = context.channel] _ in
                    channel.close(mode: .output).whenFailure { _ in channel.close(promise: nil) }
                }
                return
            }
        default: break
        }
        context.write(data, promise: promise)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if closeAfterAnswer {
            // The answer's body ends with the connection and has not ended: closed now, its
            // client would take what came for the whole. A reset says it was cut short.
            closeAfterAnswer = false
            if let socket = context.channel as? any SocketOptionProvider {
                socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { [channel = context.channel] _ in
                    channel.close(mode: .all, promise: promise)
                }
                return
            }
        }
        context.close(mode: mode, promise: promise)
    }
}

/// A server child channel with handlers of this gateway's right after its HTTP request
/// decoder (`HTTP1Rules`, `FirstRequestGuard`: where a request's version and raw header lines
/// are still there), in the order given; with `closeWhenDone`, closed once its handling ends.
struct AfterDecoder<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value
    let inner: Inner
    var closeWhenDone = false
    /// Made for each connection.
    let handlers: @Sendable () -> [any ChannelHandler]

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            var after: any ChannelHandler = try pipeline.context(handlerType: ByteToMessageHandler<HTTPRequestDecoder>.self).handler
            for handler in handlers() {
                try pipeline.addHandler(handler, position: .after(after))
                after = handler
            }
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
        if closeWhenDone { try? await value.channel.close() }
    }
}
