import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// The parts of RFC 9112 that Hummingbird leaves to the application, applied to each request
/// head as it leaves the HTTP/1 decoder (the version and the raw `Host` lines are gone once
/// the head is an `HTTPRequest`):
/// - a request that does not ask to keep its connection (HTTP/1.0 without `keep-alive`, or
///   `Connection: close`) is answered and its connection closed (9.3): Hummingbird only
///   watched `Connection: close`, so an HTTP/1.0 client waited out the idle timeout for the
///   end of every body it had no length for, and every connection was held 60 s;
/// - an HTTP/1.1 request without a `Host`, or any request with more than one, is marked for
///   the responder to answer 400 (3.2). The mark is a header of this gateway's own, taken off
///   any request that arrives with it, so that the answer keeps its place among pipelined
///   requests.
/// On an upgradable server, a request that asks for an upgrade takes this handler off its
/// connection.
final class HTTP1Rules: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    /// The header that marks a request the responder must refuse, with the reason.
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
        let hosts = head.headers["host"].count  // lines, not values: an empty Host is one
        if hosts > 1 || (hosts == 0 && head.version != .http1_0) {
            head.headers.add(name: Self.refusalMark, value: hosts == 0 ? "an HTTP/1.1 request needs a Host header" : "more than one Host header")
        }
        if !head.isKeepAlive {
            head.headers.replaceOrAdd(name: "connection", value: "close")
        }
        context.fireChannelRead(Self.wrapInboundOut(.head(head)))
        // A request that may be upgraded (the tracker's WebSocket) leaves the HTTP decoder
        // behind it: what follows is frames, not request parts, and reading them as parts
        // would stop the process. The connection goes on without these rules.
        if upgradable && head.headers.contains(name: "upgrade") {
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }
}

/// A server child channel with `HTTP1Rules` right after its HTTP request decoder.
struct RuleChecked<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value
    let inner: Inner
    let upgradable: Bool

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let decoder = try pipeline.context(handlerType: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try pipeline.addHandler(HTTP1Rules(upgradable: upgradable), position: .after(decoder.handler))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
