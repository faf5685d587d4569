import Testing

@testable import Manifest

@Suite("The proxy URL scheme")
struct ProxyURLTests {
    static let gateway = "http://gw.example:8080"

    @Test(arguments: [
        "http://cdn.example.com/vod/a.m3u8",
        "https://cdn.example.com/vod/a.m3u8?token=a%2Fb&exp=1&&sig=x=y",
        "http://cdn.example.com:81/v%20x/seg-1.ts?a=1",
        "http://[2001:db8::1]:8080/x/y.ts",
        "https://CDN.Example.com/UPPER/case.ts?Q=1",
    ])
    func roundTrip(origin: String) throws {
        let url = try OriginURL(origin)
        for vhost in [ProxyURL.VirtualHost.hls, .file] {
            for key in [false, true] {
                let proxy = ProxyURL(virtualHost: vhost, origin: url, xresid: try XResID("stream-1.a_b"), isKey: key)
                let s = try proxy.string(gateway: Self.gateway + "/")
                #expect(s.hasPrefix(Self.gateway + "/" + vhost.rawValue + "/"))
                let target = String(s.dropFirst(Self.gateway.count))
                #expect(try ProxyURL(requestTarget: target) == proxy)
            }
        }
    }

    @Test func decodingKeepsTheOriginQueryByteForByte() throws {
        let p = try ProxyURL(
            requestTarget: "/hls.vod.p2p.com/cdn.example.com/a/b.ts?z=%2F%2f&xresid=abc&a=+1&xhttps=1&b&xkey=0")
        #expect(p.origin.string == "https://cdn.example.com/a/b.ts?z=%2F%2f&a=+1&b")
        #expect(p.xresid.value == "abc")
        #expect(p.isKey == false)
        #expect(p.virtualHost == .hls)
    }

    /// A client that sends raw bytes in the path (`/é {x}.ts`) names the object that the
    /// rewritten manifest's encoded URL names: the path is written as manifests are; the query
    /// stays byte for byte.
    @Test func aRawPathNamesTheObjectItsEncodedFormNames() throws {
        let raw = try ProxyURL(requestTarget: "/hls.vod.p2p.com/cdn.example.com/v/é {x}.ts?a=é b")
        let encoded = try ProxyURL(requestTarget: "/hls.vod.p2p.com/cdn.example.com/v/%C3%A9%20%7Bx%7D.ts?a=é b")
        #expect(raw.origin.path == "/v/%C3%A9%20%7Bx%7D.ts" && raw.origin.path == encoded.origin.path)
        #expect(raw.origin.query == "a=é b")
        #expect(try OriginURL(raw.origin.string).path == raw.origin.path, "the registry's check of a ref's URL against its key")
        #expect(raw.xresid == encoded.xresid)
    }

    /// The bytes encoded in a path are the WHATWG path percent-encode set: C0 controls, space,
    /// `"`, `#` and `?` (delimiters, never inside a path here), `<`, `>`, backquote, `{`, `}`,
    /// DEL and everything from 0x80.
    @Test func thePathSetIsWHATWGs() {
        for b in UInt8.min...UInt8.max {
            let expected = b <= 0x20 || b >= 0x7F || [0x22, 0x3C, 0x3E, 0x60, 0x7B, 0x7D].contains(b)
            #expect(URLBytes.isUnsafeInPath(b) == expected, "byte \(b)")
        }
    }

    /// The check over a view agrees with the byte-by-byte one wherever the byte lies.
    @Test func theViewCheckFindsEveryByteOfTheSets() {
        var disagreements: [[UInt8]] = []
        func check(_ bytes: [UInt8]) {
            let agree = bytes.withUnsafeBufferPointer { view in
                URLBytes.pathSetFree(view) == !bytes.contains(where: URLBytes.isUnsafeInPath)
                    && URLBytes.querySetFree(view) == !bytes.contains(where: URLBytes.isUnsafeInQuery)
            }
            if !agree { disagreements.append(bytes) }
        }
        // Every byte in neither set, in turn; then one byte changed to each byte of the sets
        // and to their neighbours, which are in neither (`!`, `=`, `|`, `~`, ...).
        let safe = (UInt8(0x21)...0x7E).filter { !URLBytes.isUnsafeInPath($0) }
        for length in 0...40 {
            let clean = (0..<length).map { safe[$0 % safe.count] }
            check(clean)
            #expect(clean.withUnsafeBufferPointer(URLBytes.pathSetFree), "\(clean)")
            for at in 0..<length {
                for odd: UInt8 in [
                    0x00, 0x09, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F, 0x5F, 0x60, 0x61, 0x7A, 0x7B, 0x7C, 0x7D,
                    0x7E, 0x7F, 0x80, 0xC3, 0xFF,
                ] {
                    var bytes = clean
                    bytes[at] = odd
                    check(bytes)
                }
            }
        }
        #expect(disagreements.isEmpty)
    }

    @Test func xresidIsDerivedFromHostAndPathNeverTheQuery() throws {
        let a = try ProxyURL(requestTarget: "/hls.vod.p2p.com/CDN.example.com/v/a.m3u8?token=1")
        let b = try ProxyURL(requestTarget: "/hls.vod.p2p.com/cdn.example.com/v/a.m3u8?token=2")
        #expect(a.xresid == b.xresid)
        #expect(a.xresid.value == MD5.hex(Array("cdn.example.com/v/a.m3u8".utf8)))
        let c = try ProxyURL(requestTarget: "/hls.vod.p2p.com/cdn.example.com/v/b.m3u8?token=1")
        #expect(c.xresid != a.xresid)
    }

    @Test(arguments: [
        ("/hls.vod.p2p.com/cdn.example.com/a.ts?xresid=bad%20id", ManifestError.Code.invalidXResID),
        ("/hls.vod.p2p.com/cdn.example.com/a.ts?xresid=", .invalidXResID),
        ("/hls.vod.p2p.com/cdn.example.com/a.ts?xresid=" + String(repeating: "a", count: 129), .invalidXResID),
        ("/hls.vod.p2p.com/cdn.example.com/a.ts?xmode=random", .invalidProxyURL),
        ("/hls.vod.p2p.com/cdn.example.com/a.ts?xhttps=yes", .invalidProxyURL),
        ("/hls.vod.p2p.com/", .invalidProxyURL),
        ("/hls.vod.p2p.com", .invalidProxyURL),
        ("/hls.vod.p2p.com/user@host/a.ts", .invalidProxyURL),
        // Ports the origin client could not use: the client's error, not the origin's.
        ("/hls.vod.p2p.com/cdn.example.com:99999/a.ts", .invalidProxyURL),
        ("/hls.vod.p2p.com/cdn.example.com:0/a.ts", .invalidProxyURL),
        ("/hls.vod.p2p.com/cdn.example.com:abc/a.ts", .invalidProxyURL),
        ("/hls.vod.p2p.com/cdn.example.com:80:81/a.ts", .invalidProxyURL),
        ("/hls.vod.p2p.com/[::1]x/a.ts", .invalidProxyURL),
        ("/hls.vod.p2p.com/[::1/a.ts", .invalidProxyURL),
        ("/hls.vod.p2p.com/[]/a.ts", .invalidProxyURL),
        ("/hls.vod.p2p.com/[::g]/a.ts", .invalidProxyURL),
        ("/hls.vod.p2p.com/[:::]/a.ts", .invalidProxyURL),
        ("/hls.vod.p2p.com/[1::2::3]/a.ts", .invalidProxyURL),
        ("/hls.vod.p2p.com/[12345::]/a.ts", .invalidProxyURL),
        ("/hls.vod.p2p.com/:80/a.ts", .invalidProxyURL),
        ("/www.example.com/cdn.example.com/a.ts", .unknownVirtualHost),
        ("/", .unknownVirtualHost),
        ("hls.vod.p2p.com/x/a.ts", .invalidProxyURL),
    ])
    func malformedRequestsAreNamed(target: String, code: ManifestError.Code) {
        #expect {
            try ProxyURL(requestTarget: target)
        } throws: { error in
            (error as? ManifestError)?.code == code
        }
    }

    @Test(arguments: ["cdn.example.com", "cdn.example.com:8080", "cdn.example.com:", "10.0.0.1:65535", "[::1]", "[2001:db8::1]:443", "[::ffff:1.2.3.4]", "my_host-1.example"])
    func wellFormedAuthoritiesAreTaken(authority: String) throws {
        #expect(try ProxyURL(requestTarget: "/hls.vod.p2p.com/\(authority)/a.ts").origin.authority == authority)
    }

    @Test func aPercentEncodedIPv6HostIsDecoded() throws {
        let p = try ProxyURL(requestTarget: "/hls.vod.p2p.com/%5B::1%5D%3A8080/a.ts")
        #expect(p.origin.authority == "[::1]:8080")
        #expect(throws: ManifestError.self) { try ProxyURL(requestTarget: "/hls.vod.p2p.com/host%40evil/a.ts") }
        #expect(throws: ManifestError.self) { try ProxyURL(requestTarget: "/hls.vod.p2p.com/h%zz/a.ts") }
    }

    @Test func xmodeOrderedIsAccepted() throws {
        let p = try ProxyURL(requestTarget: "/xdfs.p2p.com/cdn.example.com/movie.mp4?sign=1&xresid=m1&xmode=ordered")
        #expect(p.virtualHost == .file)
        #expect(p.origin.string == "http://cdn.example.com/movie.mp4?sign=1")
        #expect(try p.string(gateway: "http://g") == "http://g/xdfs.p2p.com/cdn.example.com/movie.mp4?sign=1&xresid=m1&xmode=ordered")
    }

    @Test func anOriginQueryThatUsesAGatewayNameCannotBeBuilt() throws {
        let p = ProxyURL(virtualHost: .hls, origin: try OriginURL("http://h/a.ts?xresid=1"), xresid: try XResID("x"))
        #expect {
            try p.string(gateway: "http://g")
        } throws: { error in
            (error as? ManifestError)?.code == .reservedParameter
        }
    }

    @Test func dotSegmentsInTheRequestPathCannotEscapeTheOriginPath() throws {
        let p = try ProxyURL(requestTarget: "/hls.vod.p2p.com/cdn.example.com/a/../../../etc/passwd")
        #expect(p.origin.path == "/etc/passwd")
        #expect(p.origin.authority == "cdn.example.com")
    }
}
