import Hummingbird
import Origin

/// A `Range` request header resolved against a representation's length (RFC 9110 section 14).
/// swarmgate serves one range per response: a request for several ranges gets the whole
/// representation, which RFC 9110 allows a server to send.
public enum RangeRequest: Hashable, Sendable {
    /// No (usable) range: send everything with 200.
    case full
    /// Send `range` with 206 and `Content-Range: bytes first-last/length`.
    case partial(ClosedRange<Int64>)
    /// 416 with `Content-Range: bytes */length`.
    case unsatisfiable

    /// Why a Range header could not be read (answered 400, SPEC section 1).
    public struct SyntaxError: Error, Hashable, Sendable {
        public let header: String
    }

    /// Reads `header` (the Range header's value, nil when absent) for a representation of
    /// `length` bytes. `bytes=a-b`, `bytes=a-` and the suffix form `bytes=-n` are understood;
    /// a range unit other than bytes is ignored (RFC 9110 14.2); several ranges get the whole
    /// representation.
    public static func resolve(_ header: String?, length: Int64) throws(SyntaxError) -> RangeRequest {
        guard let header else { return .full }
        let trimmed = header.trimmingASCIISpaces
        guard let eq = trimmed.firstIndex(of: "=") else { throw SyntaxError(header: header) }
        let unit = trimmed[..<eq].trimmingASCIISpaces.lowercased()
        guard unit == "bytes" else { return .full }
        // A list's empty elements are ignored (RFC 9110 5.6.1.2: `bytes=0-9,` is one range).
        let specs = trimmed[trimmed.index(after: eq)...].split(separator: ",").map { $0.trimmingASCIISpaces }.filter { !$0.isEmpty }
        guard !specs.isEmpty else { throw SyntaxError(header: header) }
        var ranges: [ClosedRange<Int64>] = []
        var anySatisfiable = false
        for spec in specs {
            guard let dash = spec.firstIndex(of: "-") else { throw SyntaxError(header: header) }
            let first = spec[..<dash], last = spec[spec.index(after: dash)...]
            if first.isEmpty {
                // suffix-range: the last n bytes
                guard let n = Self.number(last) else { throw SyntaxError(header: header) }
                if n == 0 || length == 0 { continue }
                anySatisfiable = true
                ranges.append(max(0, length - n)...(length - 1))
            } else {
                guard let a = Self.number(first) else { throw SyntaxError(header: header) }
                var b = length - 1
                if !last.isEmpty {
                    guard let parsed = Self.number(last), parsed >= a else { throw SyntaxError(header: header) }
                    b = min(parsed, length - 1)
                }
                if a >= length { continue }
                anySatisfiable = true
                ranges.append(a...b)
            }
        }
        guard anySatisfiable else { return .unsatisfiable }
        guard ranges.count == 1 else { return .full }
        return .partial(ranges[0])
    }

    /// 1*DIGIT, any number of them: one past Int64 is past any representation's end, so it
    /// counts as Int64.max (a last position is clamped, a first one is unsatisfiable).
    static func number(_ s: Substring) -> Int64? {
        guard !s.isEmpty, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(s) ?? .max
    }
}

/// What a media answer sends for a client's `Range` (RFC 9110): the status, the bytes and the
/// `Content-Range` to set.
struct RangeAnswer {
    var status: HTTPResponse.Status = .ok
    var first: Int64 = 0
    var count: Int64
    var contentRange: String?

    /// The answer for `header` on an object of `length` bytes: 400 for bad syntax, 416 with
    /// `bytes */LENGTH` for an unsatisfiable range.
    init(_ header: String?, length: Int64) throws(GatewayFailure) {
        count = length
        guard let header else { return }
        let resolved: RangeRequest
        do { resolved = try RangeRequest.resolve(header, length: length) } catch {
            throw GatewayFailure(.badRequest, "bad Range header")
        }
        switch resolved {
        case .full: break
        case .unsatisfiable:
            throw GatewayFailure(.rangeNotSatisfiable, "range not satisfiable", headers: [.contentRange: "bytes */\(length)"])
        case .partial(let r):
            status = .partialContent
            first = r.lowerBound
            count = r.upperBound - r.lowerBound + 1
            contentRange = "bytes \(r.lowerBound)-\(r.upperBound)/\(length)"
        }
    }
}
