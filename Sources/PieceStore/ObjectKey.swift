/// What a media object is cached and shared under (SPEC section 1): its stream, origin host
/// and origin path — never the query, so rotating anti-leech tokens share one copy.
public struct ObjectKey: Hashable, Sendable, CustomStringConvertible {
    public let xresid: String
    /// The origin host, with `:port` when the URL had one.
    public let host: String
    public let path: String
    /// A fixed-length name for files and rows: hex SHA-256 of the three parts. Never a path
    /// taken from the client.
    public let id: String

    public init(xresid: String, host: String, path: String) {
        self.xresid = xresid
        self.host = host
        self.path = path
        id = SHA256.hex(of: xresid + "\n" + host + "\n" + path)
    }

    public static func == (a: ObjectKey, b: ObjectKey) -> Bool { a.id == b.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    public var description: String { "\(xresid) \(host)\(path)" }

    /// Whether `s` can be an object id: 64 lowercase hex digits (a SHA-256).
    public static func isID(_ s: String) -> Bool {
        s.utf8.count == 64 && s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}
