import CLinux
import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import Synchronization

/// A verified piece in a sealed memfd: immutable once made (no write, grow, shrink or new seal,
/// not even by this process), so the bytes checked before sealing are the bytes every later
/// read or `sendfile` sees. The memory tier keeps pieces this way; responses send them to the
/// socket without copying them through user space.
final class SealedPiece: Sendable {
    let fd: Int32
    let count: Int

    private init(fd: Int32, count: Int) {
        self.fd = fd
        self.count = count
    }

    deinit { close(fd) }

    /// A sealed copy of `buffer`'s readable bytes; nil when the kernel refuses (no memfd).
    static func seal(_ buffer: ByteBuffer) -> SealedPiece? {
        let fd = buffer.withUnsafeReadableBytes { swarmgate_sealed_memfd($0.baseAddress, $0.count) }
        return fd >= 0 ? SealedPiece(fd: fd, count: buffer.readableBytes) : nil
    }

    /// Whether this kernel makes sealed memfds (Linux 3.17 and later).
    static let isAvailable: Bool = seal(ByteBuffer(bytes: [0])) != nil

    /// A copy of the bytes, for the few uses that need them in memory.
    func bytes() -> ByteBuffer? {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        var ok = true
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
            var done = 0
            while done < count {
                let n = pread(fd, raw.baseAddress! + done, count - done, off_t(done))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { ok = false; return 0 }
                done += n
            }
            return count
        }
        return ok ? buffer : nil
    }
}

/// Sending bytes of sealed pieces with `sendfile`. Hummingbird's body writer takes only
/// ByteBuffers, so a body writes a small stand-in (`marker`) naming the region, and
/// `ZeroCopyBodyWriter`, between Hummingbird's codec and NIO's HTTP/1 encoder, replaces it by a
/// `FileRegion` of the memfd. A stand-in is 24 random bytes fixed per process and a token;
/// a real body chunk cannot be mistaken for one.
enum ZeroCopy {
    struct Region {
        let piece: SealedPiece
        let offset: Int
        let length: Int
        let made: ContinuousClock.Instant
    }

    static let magic: [UInt8] = (0..<24).map { _ in UInt8.random(in: 0...255) }
    static let markerSize = 32
    /// Regions written but not sent yet; a response whose connection died leaves its regions
    /// here until they are this old.
    static let maxAge: Duration = .seconds(60)
    private static let regions = Mutex<(next: UInt64, pending: [UInt64: Region])>((0, [:]))

    /// The stand-in for `length` bytes of `piece` from `offset`.
    static func marker(_ piece: SealedPiece, offset: Int, length: Int) -> ByteBuffer {
        let now = ContinuousClock.now
        let token = regions.withLock { r -> UInt64 in
            r.next += 1
            r.pending[r.next] = Region(piece: piece, offset: offset, length: length, made: now)
            if r.next % 4096 == 0 { r.pending = r.pending.filter { now - $0.value.made < maxAge } }
            return r.next
        }
        var b = ByteBufferAllocator().buffer(capacity: markerSize)
        b.writeBytes(magic)
        b.writeInteger(token)
        return b
    }

    /// The region a stand-in names (once), or nil for any other buffer.
    static func take(_ b: ByteBuffer) -> Region? {
        guard b.readableBytes == markerSize,
            b.withUnsafeReadableBytes({ raw in magic.withUnsafeBytes { memcmp(raw.baseAddress!, $0.baseAddress!, 24) == 0 } }),
            let token = b.getInteger(at: b.readerIndex + 24, as: UInt64.self)
        else { return nil }
        return regions.withLock { $0.pending.removeValue(forKey: token) }
    }
}

/// Replaces stand-ins in response bodies by `FileRegion`s of their sealed pieces (sent with
/// `sendfile`); everything else passes through.
final class ZeroCopyBodyWriter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .body(.byteBuffer(let b)) = unwrapOutboundIn(data), b.readableBytes == ZeroCopy.markerSize,
            let region = ZeroCopy.take(b)
        else {
            context.write(data, promise: promise)
            return
        }
        let fd = dup(region.piece.fd)
        guard fd >= 0 else {
            promise?.fail(IOError(errnoCode: errno, reason: "dup"))
            context.close(promise: nil)
            return
        }
        let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: fd)
        let sent = context.eventLoop.makePromise(of: Void.self)
        sent.futureResult.whenComplete { _ in try? handle.close() }
        if let promise { sent.futureResult.cascade(to: promise) }
        let file = FileRegion(fileHandle: handle, readerIndex: region.offset, endIndex: region.offset + region.length)
        context.write(wrapOutboundOut(.body(.fileRegion(file))), promise: sent)
    }
}

/// Added by Hummingbird after its HTTP/1 codec; puts a `ZeroCopyBodyWriter` before that codec,
/// where response parts are NIO's (whose bodies may be file regions), then passes everything on.
final class ZeroCopyInstaller: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    func handlerAdded(context: ChannelHandlerContext) {
        let pipeline = context.pipeline.syncOperations
        do {
            try pipeline.addHandler(ZeroCopyBodyWriter(), position: .before(try pipeline.handler(type: HTTP1ToHTTPServerCodec.self)))
        } catch {
            // Without the writer a stand-in would reach the client as bytes: no connection then.
            context.close(promise: nil)
        }
    }
}
