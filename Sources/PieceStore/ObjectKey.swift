/// What a media object is cached and shared under (SPEC section 1): its stream, origin host
/// and origin path — never the query, so rotating anti-leech tokens share one copy.
public struct ObjectKey: Hashable, Sendable, CustomStringConvertible {
    public let xresid: String
    /// The origin host, with `:port` when the URL had one.
    public let host: String
    public let path: String

    public init(xresid: String, host: String, path: String) {
        self.xresid = xresid
        self.host = host
        self.path = path
    }

    /// A fixed-length name for files and rows: hex SHA-256 of the three parts. Never a path
    /// taken from the client.
    public var id: String { SHA256.hex(of: xresid + "\n" + host + "\n" + path) }

    public var description: String { "\(xresid) \(host)\(path)" }
}
