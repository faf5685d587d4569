import Foundation
import Origin

/// The config file: TOML, the part of it settings need — top-level `key = value` lines with
/// strings, integers, decimals, booleans and arrays of strings (over lines too), and comments. Anything else is
/// refused with the line named, so a typo never silently changes nothing.
enum ConfigFile {
    enum Value: Hashable {
        case string(String)
        case integer(Int)
        case bool(Bool)
        case list([String])
        /// A decimal number (a TOML float, `0.5`), kept as written: settings read numbers from
        /// text, as flags give them.
        case decimal(String)
    }

    static func parse(_ text: String, path: String) throws(SettingsError) -> [String: Value] {
        var out: [String: Value] = [:]
        // "\r\n" is one Character: a file written on Windows is split there too.
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map { raw in
            (raw.hasSuffix("\r") ? raw.dropLast() : raw).trimmingASCIISpaces
        }
        var i = -1
        while i + 1 < lines.count {
            i += 1
            func fail(_ why: String) -> SettingsError { SettingsError("\(path):\(i + 1): \(why)") }
            var rest = lines[i]
            if rest.isEmpty || rest.hasPrefix("#") { continue }
            if rest.hasPrefix("[") { throw fail("tables are not supported: put settings at the top level") }
            guard let eq = rest.firstIndex(of: "=") else { throw fail("expected key = value") }
            let key = String(rest[..<eq].trimmingASCIISpaces)
            guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }) else {
                throw fail("bad key '\(key)'")
            }
            rest = rest[rest.index(after: eq)...].trimmingASCIISpaces
            var value: Value
            if rest.hasPrefix("[") {
                // An array may go on over lines, with comments and a trailing comma (TOML).
                var items: [String] = []
                var itemNext = true  // after [ or a comma; else only ] may come
                rest = rest.dropFirst().trimmingASCIISpaces
                while !rest.hasPrefix("]") {
                    if rest.isEmpty || rest.hasPrefix("#") {
                        guard i + 1 < lines.count else { throw fail("the array has no closing ]") }
                        i += 1
                        rest = lines[i]
                        continue
                    }
                    guard itemNext else { throw fail("expected , or ]") }
                    guard let (s, after) = try string(rest, fail) else { throw fail("arrays hold strings") }
                    items.append(s)
                    rest = after.trimmingASCIISpaces
                    itemNext = rest.hasPrefix(",")
                    if itemNext { rest = rest.dropFirst().trimmingASCIISpaces }
                }
                rest = rest.dropFirst().trimmingASCIISpaces
                value = .list(items)
            } else if let (s, after) = try string(rest, fail) {
                value = .string(s)
                rest = after.trimmingASCIISpaces
            } else {
                var token = rest
                if let hash = token.firstIndex(of: "#") { token = token[..<hash] }
                token = token.trimmingASCIISpaces
                rest = rest[token.endIndex...].trimmingASCIISpaces
                let number = token.replacingOccurrences(of: "_", with: "")
                if token == "true" { value = .bool(true) }
                else if token == "false" { value = .bool(false) }
                else if let n = Int(number) { value = .integer(n) }
                else if number.contains("."), number.allSatisfy({ $0.isASCII && ($0.isNumber || "+-.".contains($0)) }), Double(number) != nil {
                    value = .decimal(number)
                }
                else { throw fail("cannot read value '\(token)' (strings need quotes)") }
            }
            guard rest.isEmpty || rest.hasPrefix("#") else { throw fail("unexpected text after the value") }
            guard out[key] == nil else { throw fail("'\(key)' is set twice") }
            out[key] = value
        }
        return out
    }

    /// A basic ("...") or literal ('...') string at the start of `s`, and what follows it.
    static func string(_ s: Substring, _ fail: (String) -> SettingsError) throws(SettingsError) -> (String, Substring)? {
        guard let q = s.first, q == "\"" || q == "'" else { return nil }
        var out = ""
        var i = s.index(after: s.startIndex)
        while i < s.endIndex {
            let c = s[i]
            if c == q { return (out, s[s.index(after: i)...]) }
            if c == "\\" && q == "\"" {
                i = s.index(after: i)
                guard i < s.endIndex else { break }
                switch s[i] {
                case "n": out.append("\n")
                case "t": out.append("\t")
                case "\\": out.append("\\")
                case "\"": out.append("\"")
                default: throw fail("unsupported escape \\\(s[i])")
                }
            } else {
                out.append(c)
            }
            i = s.index(after: i)
        }
        throw fail("unterminated string")
    }
}
