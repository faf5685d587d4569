import Foundation

/// One signalling message between a node and the tracker: a JSON object in a WebSocket text
/// frame, `type` saying which. Fields a type does not use are absent.
///
/// | type | from | fields |
/// |---|---|---|
/// | `login` | node | `appId`, `peerId`, `ts`, `nonce`, `sig` (see `LoginProof`), `url` (the node's public URL) |
/// | `welcome` | tracker | `heartbeat` (seconds between pings) |
/// | `refused` | tracker | `reason`; for a peer id in use, `heardAgo`: milliseconds since the session holding it was last heard; the tracker then closes the connection |
/// | `ping` / `pong` | node / tracker | |
/// | `have` / `lost` | node | `objects`: object ids now held / no longer held |
/// | `want` | node | `object`, `rid` |
/// | `peers` | tracker | `rid`, `peers`: holders best first, each with a piece token |
/// | `report` | node | `object`, `peerId`, `piece`: that peer sent that piece and it failed verification; the tracker asks the peer for it itself before it counts against it |
/// | `sums` | node | `rid`, `ref`, `urgent`, `wait`, `readyWithin`, `ifReady`: the checksums of an object, prepared if need be; `wait` false: a not-ready answer comes at once, without waiting for the origin's first answer; `readyWithin` (milliseconds, optional): a preparation under way that its progress says will end by then is waited for; `ifReady` true (a prefetch): only a ready object's checksums, the object neither prepared nor counted as reached by a player |
/// | `sums` | tracker | `rid`, `object`, `answer` (a `ChecksumAnswer`; its `manifest` says the origin answered a playlist or an MPD at that path), and with a ready answer `peers` as for a want |
/// | `sums` | tracker | unasked (no `rid`): `items`, each with `ref`, `object`, a ready `answer` and `peers`, for the first objects of a node's `prepare`: those ready at once, the others as they become ready |
/// | `prepare` | node | `refs`: objects to prepare ahead of players, in playback order |
/// | `changed` | node | `ref`, `piece`: the origin's copy of that piece no longer matches the registry's checksum; the registry checks it against the origin itself and, if so, prepares the object again |
/// | `dropped` | tracker | `object`, `copy`: the registry dropped that copy of the object (the origin's changed); a holder of it drops its pieces and checksums |
public struct SwarmMessage: Codable, Sendable, Equatable {
    public var type: String
    public var appId: String?
    public var peerId: String?
    public var ts: Int64?
    public var nonce: String?
    public var sig: String?
    public var url: String?
    public var heartbeat: Int?
    public var reason: String?
    /// A `refused` for a peer id in use: milliseconds since its session was last heard (0 for
    /// the tracker's own seed). Heard again after a node's first refusal, that session is
    /// another node's, not this node's own from before a restart.
    public var heardAgo: Int?
    public var objects: [String]?
    public var object: String?
    public var rid: Int?
    public var peers: [SwarmPeer]?
    public var ref: ObjectRef?
    public var refs: [ObjectRef]?
    public var urgent: Bool?
    public var wait: Bool?
    public var readyWithin: Int?
    /// A `sums` that asks only for checksums ready now (see the table).
    public var ifReady: Bool?
    /// A piece index (`changed`, `report`).
    public var piece: Int?
    /// A copy of an object: its checksums' `fingerprint` (`dropped`).
    public var copy: String?
    /// A `prepare` of every object now (`swarmgate prepare`), not read-ahead from a playlist;
    /// a `have` of everything the node holds (its login's), not of objects just stored.
    public var whole: Bool?
    /// A `prepare` of an operator's: what failed or was cancelled is queued again.
    public var retry: Bool?
    public var answer: ChecksumAnswer?
    /// Objects' checksums in one unasked `sums`.
    public var items: [SwarmMessage]?

    public init(type: String) { self.type = type }

    public static func login(_ proof: LoginProof, url: String) -> SwarmMessage {
        var m = SwarmMessage(type: "login")
        m.appId = proof.appID
        m.peerId = proof.peerID
        m.ts = proof.timestamp
        m.nonce = proof.nonce
        m.sig = proof.signature
        m.url = url
        return m
    }

    public var json: String {
        // Encoding these plain fields cannot fail.
        String(decoding: (try? JSONEncoder().encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// The largest message a tracker reads from a node, in bytes.
    public static let maxTrackerMessageSize = 4 << 20
    /// The largest first message (the login) a tracker reads: before it, anyone may connect.
    public static let maxLoginSize = 16 << 10
    /// The most objects one `prepare` carries: a read-ahead playlist past it is prepared as its
    /// first this many, and a `whole` one goes in several messages.
    public static let maxPrepareRefs = 10_000
    /// The most object ids one `have` or `lost` carries (67 bytes of JSON each: 1.3 MB, well
    /// under `maxTrackerMessageSize`); more go in several messages. A node announces all it
    /// holds at each login: in one message, a cache of some 62,600 objects or more went over
    /// the tracker's bound, which ended the session at every login, for good.
    public static let maxObjectIDs = 20_000

    /// `objects` as messages of `type` (`have`, `lost`), `maxObjectIDs` ids at most each.
    public static func objectLists(_ type: String, _ objects: [String], whole: Bool = false) -> [SwarmMessage] {
        stride(from: 0, to: objects.count, by: maxObjectIDs).map { start in
            var m = SwarmMessage(type: type)
            m.objects = Array(objects[start..<min(start + maxObjectIDs, objects.count)])
            if whole { m.whole = true }
            return m
        }
    }

    /// The size of the halves of a long read-ahead list, or 0 for a list that goes whole in
    /// one message. A list longer than a message reaches the tracker in parts
    /// (`readAheadPart`): its plan carries the first message (halves 0 and 1 at least), and a
    /// player in half j ≥ 1 has its node send halves j and j + 1. A read-ahead window is a few
    /// hundred objects at most and a half a thousand or more, so the window of a player in
    /// half j stays inside the part.
    ///
    /// Halves are `maxPrepareRefs / 2` objects, halved while two of the list's largest refs'
    /// worth would not fit one message with room (long URLs: their tokens): a grid, so that
    /// players whose tokens differ a little still name the same parts, which the tracker knows
    /// as one list each.
    public static func readAheadHalfSize(_ refs: [ObjectRef]) -> Int {
        var total = 0, largest = 0
        for ref in refs {
            let size = estimatedSize(ref)
            total += size
            largest = max(largest, size)
        }
        let budget = maxTrackerMessageSize - messageOverhead
        guard refs.count > maxPrepareRefs || total > budget else { return 0 }
        var half = maxPrepareRefs / 2
        while half > 1 && 2 * half * largest > budget * 9 / 10 { half /= 2 }
        return half
    }

    /// The part of a long read-ahead list (halves of `halfSize`, `readAheadHalfSize`) that a
    /// player at `position` needs sent: nil while the plan's first message covers it (half 0,
    /// or a list that fits one message), else the range of halves j and j + 1 (j being the
    /// player's half).
    public static func readAheadPart(halfSize: Int, count: Int, at position: Int) -> Range<Int>? {
        guard halfSize > 0, position >= halfSize, position < count else { return nil }
        let start = position / halfSize * halfSize
        return start..<min(start + 2 * halfSize, count)
    }

    /// An upper bound of one ref's JSON in a `prepare` (its keys and duration, and its strings
    /// with every character escaped, as `/` is): a URL holds no control character.
    static func estimatedSize(_ ref: ObjectRef) -> Int {
        96 + 2 * (ref.xresid.utf8.count + ref.host.utf8.count + ref.path.utf8.count + ref.url.utf8.count)
    }

    /// What a `prepare` holds besides its refs, at most.
    static let messageOverhead = 256

    /// `refs` as `prepare` messages a tracker takes, each within `maxPrepareRefs` objects and
    /// `maxTrackerMessageSize` bytes: all of them in turn if `whole`, else (read-ahead, which
    /// knows a playlist by its first and last object and their count) the first message's
    /// alone, the same for every read of the playlist. An object too large for any message is
    /// left out. Each message comes with its text and how many objects it carries.
    public static func prepares(_ refs: [ObjectRef], whole: Bool, retry: Bool = false) -> [(message: SwarmMessage, json: String, count: Int)] {
        var out: [(message: SwarmMessage, json: String, count: Int)] = []
        var rest = refs[...]
        while !rest.isEmpty {
            var n = min(rest.count, maxPrepareRefs)
            while true {
                var m = SwarmMessage(type: "prepare")
                m.refs = Array(rest.prefix(n))
                if whole { m.whole = true }
                if retry { m.retry = true }
                let json = m.json
                let size = json.utf8.count
                if size <= maxTrackerMessageSize {
                    out.append((m, json, n))
                    break
                }
                guard n > 1 else { break }
                n = max(1, min(n - 1, Int(Double(n) * Double(maxTrackerMessageSize) / Double(size) * 0.95)))
            }
            rest = rest.dropFirst(n)
            if !whole && !out.isEmpty { break }
        }
        return out
    }

    public init?(json: String) {
        guard let m = try? JSONDecoder().decode(SwarmMessage.self, from: Data(json.utf8)) else { return nil }
        self = m
    }
}

/// A node that holds an object, as the tracker hands it out: where to fetch pieces and the
/// token that lets the asking node do so.
public struct SwarmPeer: Codable, Sendable, Hashable {
    public var peerId: String
    public var url: String
    public var token: String
}
