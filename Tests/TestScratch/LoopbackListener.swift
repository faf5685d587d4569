import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP listener on a loopback port that never accepts: to prove nothing connects to it, or
/// as an origin that never answers (a connection waits in its backlog).
public final class LoopbackListener {
    private let fd: Int32
    public let port: UInt16

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 8) == 0 else {
            throw ListenerFailure(description: "listen: \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(fd) }

    /// Whether a connection is waiting (the backlog holds any attempt, accepted or not).
    public func connectionAttempted() -> Bool {
        let client = accept(fd, nil, nil)
        if client >= 0 { close(client) }
        return client >= 0
    }
}

public struct ListenerFailure: Error, CustomStringConvertible {
    public var description: String
}
