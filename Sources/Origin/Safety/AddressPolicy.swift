/// Which origins the client may fetch (SPEC section 5). With `allowOrigins`, only URLs whose
/// host matches an entry are fetched, and they may be at private addresses. Without it, any
/// host is fetched whose address is public: the address actually connected to is checked
/// (libcurl's open-socket callback), so DNS names that resolve to loopback or private space,
/// DNS rebinding and numeric IP spellings (`0x7f000001`, `2130706433`) are all refused.
public struct AddressPolicy: Sendable, Hashable {
    /// nil: every host, public addresses only. Non-nil: only these hosts, any address.
    public var allowOrigins: [AllowedOrigin]?

    /// Any host at any address: for other gateway nodes, which the authenticated tracker
    /// names (they sit on private networks as often as not). Never for origins.
    public var anyAddress = false

    public init(allowOrigins: [AllowedOrigin]? = nil) {
        self.allowOrigins = allowOrigins
    }

    /// The policy for fetching pieces from peers (see `anyAddress`).
    public static var peers: AddressPolicy {
        var p = AddressPolicy()
        p.anyAddress = true
        return p
    }

    /// Why a URL's host may not be fetched under the allow list, or nil when it may.
    func refusal(host: String, port: Int) -> String? {
        guard let allowOrigins else { return nil }
        if allowOrigins.contains(where: { $0.matches(host: host, port: port) }) { return nil }
        return "origin \(host):\(port) is not in allow_origins"
    }

    /// Why the client may not connect to an address, or nil when it may. With an allow list
    /// every address of an allowed host is fine (the host was checked before connecting).
    func refusal(address: [UInt8]) -> String? {
        if anyAddress { return nil }
        return allowOrigins == nil ? Self.nonPublicReason(address) : nil
    }

    /// Why an IP address (4 bytes for IPv4, 16 for IPv6, network order) is not a public
    /// unicast address — "loopback", "private", "link-local"... — or nil when it is public.
    /// IPv4-mapped, IPv4-compatible, NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses are
    /// judged by the IPv4 address they carry.
    public static func nonPublicReason(_ address: [UInt8]) -> String? {
        switch address.count {
        case 4: return v4Reason(address)
        case 16: return v6Reason(address)
        default: return "not an IP address"
        }
    }

    private static let v4Ranges: [(prefix: [UInt8], bits: Int, reason: String)] = [
        ([0, 0, 0, 0], 8, "unspecified"),
        ([10, 0, 0, 0], 8, "private"),
        ([100, 64, 0, 0], 10, "shared (CGNAT)"),
        ([127, 0, 0, 0], 8, "loopback"),
        ([169, 254, 0, 0], 16, "link-local"),
        ([172, 16, 0, 0], 12, "private"),
        ([192, 0, 0, 0], 24, "reserved"),
        ([192, 0, 2, 0], 24, "documentation"),
        ([192, 88, 99, 0], 24, "reserved"),
        ([192, 168, 0, 0], 16, "private"),
        ([198, 18, 0, 0], 15, "benchmarking"),
        ([198, 51, 100, 0], 24, "documentation"),
        ([203, 0, 113, 0], 24, "documentation"),
        ([224, 0, 0, 0], 4, "multicast"),
        ([240, 0, 0, 0], 4, "reserved"),
    ]

    private static let v6Ranges: [(prefix: [UInt8], bits: Int, reason: String)] = [
        ([0x00, 0x64, 0xff, 0x9b, 0, 1], 48, "NAT64 local use"),
        ([0x01, 0x00, 0, 0, 0, 0, 0, 0], 64, "discard"),
        ([0x20, 0x01, 0x0d, 0xb8], 32, "documentation"),
        ([0xfc], 7, "unique local (private)"),
        ([0xfe, 0x80], 10, "link-local"),
        ([0xfe, 0xc0], 10, "site-local"),
        ([0xff], 8, "multicast"),
    ]

    private static func v4Reason(_ a: [UInt8]) -> String? {
        v4Ranges.first { within(a, $0.prefix, $0.bits) }?.reason
    }

    private static func v6Reason(_ a: [UInt8]) -> String? {
        // Where an IPv4 address sits inside this IPv6 one, for the forms that carry one.
        let embeddedV4: Int? =
            if within(a, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], 96) {
                12  // ::ffff:a.b.c.d, IPv4-mapped
            } else if within(a, [0x00, 0x64, 0xff, 0x9b], 96) {
                12  // 64:ff9b::a.b.c.d, NAT64
            } else if within(a, [0x20, 0x02], 16) {
                2  // 2002:aabb:ccdd::/48, 6to4
            } else {
                nil
            }
        if let at = embeddedV4 {
            return v4Reason(Array(a[at..<at + 4])).map { "\($0) (IPv4 in IPv6)" }
        }
        if a.allSatisfy({ $0 == 0 }) { return "unspecified" }
        if a.dropLast().allSatisfy({ $0 == 0 }) && a[15] == 1 { return "loopback" }
        // ::a.b.c.d, the deprecated IPv4-compatible form: never a public destination.
        if within(a, [], 96) { return "IPv4-compatible" }
        return v6Ranges.first { within(a, $0.prefix, $0.bits) }?.reason
    }

    /// Whether the first `bits` bits of `address` equal those of `prefix` (zero-padded).
    private static func within(_ address: [UInt8], _ prefix: [UInt8], _ bits: Int) -> Bool {
        var i = 0
        while i * 8 < bits {
            let p = i < prefix.count ? prefix[i] : 0
            let keep = min(8, bits - i * 8)
            let mask = UInt8(truncatingIfNeeded: 0xff << (8 - keep))
            if address[i] & mask != p & mask { return false }
            i += 1
        }
        return true
    }
}
