import Foundation
import Hummingbird
import NIOCore
import PieceStore

/// Who may call the operator's endpoints (`/prepare`, `/jobs…`): they prepare any URL the
/// gateway may fetch, pause and cancel every job, and list what was prepared with its
/// anti-leech tokens, so not every player that can reach the gateway. With an admin token
/// (`--admin-token-file`, or `SWARMGATE_ADMIN_TOKEN`): any caller that sends it as
/// `Authorization: Bearer TOKEN`, and no other. Without one: callers on loopback only (a
/// reverse proxy on the same host makes every caller local: give it a token there), and not
/// a web page's requests: a browser on the gateway's host is on loopback, and any site it
/// opens could have it turn uploads off (an image's URL) or prepare and cancel jobs.
public struct AdminAccess: Sendable {
    let token: [UInt8]?

    public init(token: String?) {
        self.token = token.flatMap { $0.isEmpty ? nil : Array($0.utf8) }
    }

    /// The admin token from `--admin-token-file` (the file's one line), else
    /// `SWARMGATE_ADMIN_TOKEN`, else the config file's `admin_token_file`; nil when none is set.
    public static func token(from s: Settings, environment: [String: String]) throws(SettingsError) -> String? {
        try token(file: s.secretFile("admin-token-file", unless: "SWARMGATE_ADMIN_TOKEN", in: environment), environment: environment)
    }

    /// The admin token from `file` (its one line, without surrounding white space), else
    /// `SWARMGATE_ADMIN_TOKEN`.
    public static func token(file: String?, environment: [String: String]) throws(SettingsError) -> String? {
        if let file {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw SettingsError("admin-token-file: cannot read \(file)")
            }
            let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !token.isEmpty else { throw SettingsError("admin-token-file: \(file) is empty") }
            // A header carries one line: a token of several could never be sent.
            guard !token.contains(where: \.isNewline) else { throw SettingsError("admin-token-file: \(file) holds more than one line") }
            return token
        }
        return environment["SWARMGATE_ADMIN_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
    }

    public enum Verdict: Equatable, Sendable {
        case allowed
        /// A token is set and the request did not send it (401).
        case needsToken
        /// No token is set and the caller is not on loopback (403).
        case notLocal
        /// No token is set and a web page made the request (403).
        case fromWebPage
    }

    /// `fromWebPage`: the request says a page made it (`isFromWebPage`).
    public func verdict(remote: SocketAddress?, authorization: String?, fromWebPage: Bool = false) -> Verdict {
        guard let token else {
            guard Self.isLoopback(remote) else { return .notLocal }
            return fromWebPage ? .fromWebPage : .allowed
        }
        guard let authorization, authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else { return .needsToken }
        let sent = authorization.dropFirst(7).trimmingCharacters(in: .whitespaces)
        return HMACSHA256.constantTimeEqual(Array(sent.utf8), token) ? .allowed : .needsToken
    }

    /// Whether a browser says a web page made the request: it names the page's origin
    /// (`Origin`, sent with every fetch or form but a plain GET's, and by a sandboxed page as
    /// `null`), or says the request is not the user's own (`Sec-Fetch-Site` other than
    /// `none`: an image, a script's fetch, a page at a name rebound to 127.0.0.1). The
    /// `swarmgate` commands, curl, and a URL typed into the address bar send neither. A
    /// browser too old for `Sec-Fetch-Site` (before 2021-2023) says nothing of an image's
    /// GET: a gateway used from a desktop's browser wants an admin token.
    public static func isFromWebPage(origin: String?, fetchSite: String?) -> Bool {
        origin != nil || (fetchSite.map { $0.lowercased() != "none" } ?? false)
    }

    /// 127.0.0.0/8, ::1, and IPv4 loopback mapped into IPv6 (a listener on `[::]`).
    public static func isLoopback(_ address: SocketAddress?) -> Bool {
        switch address {
        case .v4(let a)?:
            return UInt32(bigEndian: a.address.sin_addr.s_addr) >> 24 == 127
        case .v6(let a)?:
            let bytes = withUnsafeBytes(of: a.address.sin6_addr) { Array($0) }
            if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
            return bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff && bytes[12] == 127
        default:
            return false
        }
    }

    /// The failure for a verdict other than `.allowed`.
    /// The 403 of a caller that is not on loopback, when no admin token is set: `prepare`
    /// tells it from a 403 about the URL it asked for (an origin not allowed).
    public static let notLocalMessage = "this endpoint answers loopback callers only, unless the gateway has an admin token"

    func failure(_ verdict: Verdict) -> GatewayFailure? {
        switch verdict {
        case .allowed: return nil
        case .needsToken:
            return GatewayFailure(.unauthorized, "this endpoint needs the admin token: Authorization: Bearer TOKEN", headers: [.wwwAuthenticate: "Bearer"])
        case .notLocal: return GatewayFailure(.forbidden, Self.notLocalMessage)
        case .fromWebPage:
            return GatewayFailure(.forbidden, "a web page's request (Origin or Sec-Fetch-Site) reaches this endpoint only with the admin token")
        }
    }
}

/// The request context of a gateway: Hummingbird's basic one, and the caller's address (for
/// `AdminAccess`).
public struct GatewayRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// The connection's channel: a stop waits for what it buffers to reach the socket.
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }
}
