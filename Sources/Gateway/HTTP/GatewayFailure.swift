import Hummingbird

/// A request the gateway answers with an error status and SPEC's JSON body
/// `{"code":N,"msg":"…"}` (plus any extra fields, such as `xresid` on a 302).
public struct GatewayFailure: Error, Sendable {
    public let status: HTTPResponse.Status
    public let message: String
    public var headers: HTTPFields = [:]

    public init(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    /// An origin's error status as the gateway's answer. A client error about the request's
    /// own object (404, 403, 410…) is passed on; one the gateway cannot answer as the origin
    /// did is not: 401 asks for credentials, which the gateway never forwards (and a 401 must
    /// say how to send them), 405 must list the origin's methods, 407 is about the origin's
    /// own proxy, and a 416 for bytes the gateway asked for (a piece) is no fault of the
    /// player's. Those, and 5xx, are the origin failing the gateway.
    static func originAnswered(_ code: Int, _ context: String = "") -> GatewayFailure {
        let said = "origin answered \(code)" + context
        switch code {
        case 401: return GatewayFailure(.forbidden, said + " (it asks for credentials, which the gateway does not send)")
        // 408, 413, 414 and 431 are about the gateway's own request, not the player's.
        case 405, 407, 408, 413, 414, 416, 431: return GatewayFailure(.badGateway, said)
        case 400..<500: return GatewayFailure(HTTPResponse.Status(code: code), said)
        default: return GatewayFailure(.badGateway, said)
        }
    }

    public var response: Response {
        JSONBody.response(status: status, [("code", .int(status.code)), ("msg", .string(message))], headers: headers)
    }
}

/// Small JSON bodies, written by hand: the gateway's answers are flat objects.
public enum JSONBody {
    public enum Value: Sendable {
        case int(Int)
        case double(Double)
        case string(String)
        case bool(Bool)
        case object([(String, Value)])
        case array([Value])
        case null
    }

    public static func encode(_ fields: [(String, Value)]) -> String {
        "{" + fields.map { "\(quote($0.0)):\(encode($0.1))" }.joined(separator: ",") + "}"
    }

    static func encode(_ v: Value) -> String {
        switch v {
        case .int(let i): return String(i)
        case .double(let d): return d.isFinite ? String(d) : "0"
        case .string(let s): return quote(s)
        case .bool(let b): return b ? "true" : "false"
        case .object(let o): return encode(o)
        case .array(let a): return "[" + a.map(encode).joined(separator: ",") + "]"
        case .null: return "null"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    out += "\\u" + String(repeating: "0", count: 4 - String(u.value, radix: 16).count) + String(u.value, radix: 16)
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }

    public static func response(status: HTTPResponse.Status = .ok, _ fields: [(String, Value)], headers: HTTPFields = [:]) -> Response {
        var h = headers
        h[.contentType] = "application/json"
        h[.cacheControl] = h[.cacheControl] ?? "no-store"
        let body = encode(fields)
        return Response(status: status, headers: h, body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}
