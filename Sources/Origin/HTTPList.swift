/// The members of an HTTP header's comma-separated list (RFC 9110 5.6.1): a comma inside a
/// quoted string is part of its member; members are trimmed of spaces, empty ones dropped.
public enum HTTPList {
    public static func members(_ list: String) -> [Substring] {
        var members: [Substring] = []
        var start = list.startIndex
        var quoted = false
        for i in list.indices {
            if list[i] == "\"" { quoted.toggle() }
            if list[i] == "," && !quoted {
                members.append(list[start..<i])
                start = list.index(after: i)
            }
        }
        members.append(list[start...])
        return members.map { $0.trimmingASCIISpaces }.filter { !$0.isEmpty }
    }

    /// The lines of list field `name` in `headers` as one value, joined by commas (RFC 9110
    /// 5.3); nil when there is none.
    public static func joined(_ headers: [(name: String, value: String)], _ name: String) -> String? {
        let lower = name.lowercased()
        let values = headers.filter { $0.name.lowercased() == lower }.map(\.value)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }
}

extension StringProtocol {
    /// The string without the spaces and tabs that HTTP allows around values.
    public var trimmingASCIISpaces: Substring {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return s
    }
}
