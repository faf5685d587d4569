import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// Watches a connection of an upgradable HTTP/1 server (the default `serve`'s and the
/// tracker's: WebSocket upgrades at `/swarm/v1/ws`) until its first request has come whole.
/// Hummingbird adds its idle timeout and its answer to a malformed request there only once
/// the first request is not an upgrade, so a connection that sent nothing, half a request, a
/// malformed one, or an upgrade request whose body never ends was held open for ever,
/// unanswered. This one closes a connection whose first request has not come whole within
/// `deadline`, answers a malformed one 400 and closes it, and leaves the pipeline at the
/// first request's end (a whole upgrade request is upgraded, or answered, at once).
final class FirstRequestGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let deadline: TimeAmount
    private var timer: Scheduled<Void>?
    private var answered = false

    init(deadline: TimeAmount) {
        self.deadline = deadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { startTimer(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        startTimer(context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    private func startTimer(_ context: ChannelHandlerContext) {
        guard timer == nil else { return }
        let loop = context.eventLoop.assumeIsolated()
        timer = loop.scheduleTask(in: deadline) { Self.end(context) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = Self.unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        timer?.cancel()
        timer = nil
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    /// A stop quiesces the server: a connection whose first request has not come whole is
    /// ended then (nothing after this handler acts on the quiesce before the first request:
    /// a connection that had sent nothing, or half a request, held the stop for the whole
    /// `deadline`, a minute, past systemd's 30 s).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        timer?.cancel()
        timer = nil
        Self.end(context)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError, !answered else {
            context.fireErrorCaught(error)
            return
        }
        answered = true
        timer?.cancel()
        timer = nil
        let head = HTTPResponseHead(version: .http1_1, status: .badRequest, headers: ["Connection": "close", "Content-Length": "0"])
        context.write(Self.wrapOutboundOut(.head(head)), promise: nil)
        let sent = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(Self.wrapOutboundOut(.end(nil)), promise: sent)
        sent.futureResult.assumeIsolated().whenComplete { _ in Self.end(context) }
    }

    /// Ends the connection as one whose input closed before its first head: the upgrade
    /// handler after this one then closes it and gives up quietly. (A channel closed under it
    /// fails its upgrade with an error that Hummingbird logs as an error: one line per
    /// malformed request, for anyone to cause.)
    private static func end(_ context: ChannelHandlerContext) {
        context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        if context.channel.isActive { context.close(promise: nil) }
    }
}
