/// Query strings as the gateway sees them: `&`-separated items kept byte for byte, never
/// decoded or re-encoded. An item's name is what stands before its first `=`.
enum QueryItems {
    /// The gateway's own parameters, removed from the origin query on the way in.
    static let gatewayParameters: [[UInt8]] = [
        Array("xresid".utf8), Array("xmode".utf8), Array("xhttps".utf8), Array("xkey".utf8), Array("xvars".utf8),
    ]

    /// Calls `body` with each item and its name, in order (empty items included).
    @inline(__always)
    static func forEach<C: RandomAccessCollection<UInt8>>(
        _ q: C, _ body: (_ item: C.SubSequence, _ name: C.SubSequence) -> Void
    ) where C.Index == Int {
        var start = q.startIndex
        let end = q.endIndex
        while true {
            var i = start
            var nameEnd = -1
            while i < end && q[i] != ASCII.amp {
                if nameEnd < 0 && q[i] == ASCII.equals { nameEnd = i }
                i += 1
            }
            let item = q[start..<i]
            body(item, q[start..<(nameEnd < 0 ? i : nameEnd)])
            if i >= end { return }
            start = i + 1
        }
    }

    static func isGatewayParameter<C: Collection<UInt8>>(_ name: C) -> Bool {
        guard name.first == UInt8(ascii: "x") else { return false }
        return gatewayParameters.contains { $0.elementsEqual(name) }
    }

    /// The first gateway parameter named in `q`, if any. Runs for every URI of a playlist, so
    /// it only looks closer at items that start with "x".
    static func firstGatewayParameter(in q: ByteView) -> String? {
        var i = 0
        let end = q.count
        while i < end {
            if q[i] == UInt8(ascii: "x") {
                var j = i
                while j < end && q[j] != ASCII.equals && q[j] != ASCII.amp { j += 1 }
                let name = q.view(i..<j)
                if isGatewayParameter(name) { return String(decoding: name, as: UTF8.self) }
            }
            i = q.index(of: ASCII.amp, from: i) + 1
        }
        return nil
    }

    static func contains<C: RandomAccessCollection<UInt8>>(name: [UInt8], in q: C) -> Bool where C.Index == Int {
        var found = false
        forEach(q) { _, n in
            if !found && n.elementsEqual(name) { found = true }
        }
        return found
    }
}

/// Which parameters of a playlist URL's query are copied onto the URIs inside it that lack them.
public enum InheritQuery: Hashable, Sendable {
    /// None (the default).
    case none
    /// These names.
    case names([String])
    /// Every parameter except `_HLS_*` and the gateway's own.
    case all

    /// Parses the setting's text form: empty → none, `*` → all, else comma-separated names.
    public init(setting: String) {
        let trimmed = setting.trimmingSpaces
        if trimmed.isEmpty {
            self = .none
        } else if trimmed == "*" {
            self = .all
        } else {
            self = .names(trimmed.split(separator: ",").map { String($0).trimmingSpaces }.filter { !$0.isEmpty })
        }
    }

    /// The raw items of `query` that children inherit, with their names.
    func items(of query: String?) -> [(item: [UInt8], name: [UInt8])] {
        guard let query, self != .none else { return [] }
        let wanted: Set<[UInt8]>?
        switch self {
        case .none: return []
        case .names(let n): wanted = Set(n.map { Array($0.utf8) })
        case .all: wanted = nil
        }
        var out: [(item: [UInt8], name: [UInt8])] = []
        let q = Array(query.utf8)
        QueryItems.forEach(q) { item, name in
            guard !name.isEmpty, !QueryItems.isGatewayParameter(name) else { return }
            if let wanted {
                guard wanted.contains(Array(name)) else { return }
            } else if name.starts(with: "_HLS_".utf8) {
                return
            }
            if out.contains(where: { $0.name.elementsEqual(name) }) { return }
            out.append((Array(item), Array(name)))
        }
        return out
    }
}

extension InheritQuery {
    /// `url` with the items of `parentQuery` that children inherit appended where its query
    /// lacks them: the origin URL a player fetches for a rewritten child URI.
    public func applied(to url: OriginURL, parentQuery: String?) -> OriginURL {
        let items = items(of: parentQuery)
        guard !items.isEmpty else { return url }
        var query = url.query ?? ""
        let own = Array(query.utf8)
        for (item, name) in items where !QueryItems.contains(name: name, in: own[...]) {
            if !query.isEmpty { query += "&" }
            query += String(decoding: item, as: UTF8.self)
        }
        return OriginURL(isHTTPS: url.isHTTPS, authority: url.authority, path: url.path, query: query)
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
