import Testing

@testable import Manifest

/// RFC 3986 section 5.4: every normal and abnormal example, against the RFC's own base.
/// Only http(s) results are origin URLs, so the base is the RFC's with an http scheme.
@Suite("RFC 3986 reference resolution")
struct ResolutionTests {
    static let base = try! OriginURL("http://a/b/c/d;p?q")

    @Test(arguments: [
        ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"), ("//g", "http://g/"), ("?y", "http://a/b/c/d;p?y"),
        ("g?y", "http://a/b/c/g?y"), ("#s", "http://a/b/c/d;p?q"), ("g#s", "http://a/b/c/g"),
        ("g?y#s", "http://a/b/c/g?y"), (";x", "http://a/b/c/;x"), ("g;x", "http://a/b/c/g;x"),
        ("g;x?y#s", "http://a/b/c/g;x?y"), ("", "http://a/b/c/d;p?q"), (".", "http://a/b/c/"),
        ("./", "http://a/b/c/"), ("..", "http://a/b/"), ("../", "http://a/b/"), ("../g", "http://a/b/g"),
        ("../..", "http://a/"), ("../../", "http://a/"), ("../../g", "http://a/g"),
        // abnormal examples (5.4.2)
        ("../../../g", "http://a/g"), ("../../../../g", "http://a/g"), ("/./g", "http://a/g"),
        ("/../g", "http://a/g"), ("g.", "http://a/b/c/g."), (".g", "http://a/b/c/.g"),
        ("g..", "http://a/b/c/g.."), ("..g", "http://a/b/c/..g"), ("./../g", "http://a/b/g"),
        ("./g/.", "http://a/b/c/g/"), ("g/./h", "http://a/b/c/g/h"), ("g/../h", "http://a/b/c/h"),
        ("g;x=1/./y", "http://a/b/c/g;x=1/y"), ("g;x=1/../y", "http://a/b/c/y"),
        ("g?y/./x", "http://a/b/c/g?y/./x"), ("g?y/../x", "http://a/b/c/g?y/../x"),
        ("g#s/./x", "http://a/b/c/g"), ("g#s/../x", "http://a/b/c/g"), ("http:g", nil),
    ] as [(String, String?)])
    func rfcExamples(reference: String, expected: String?) throws {
        if let expected {
            #expect(try Self.base.resolve(reference)?.string == expected)
        } else {
            // "http:g" is an http URI without a host: not an origin URL.
            #expect(throws: ManifestError.self) { try Self.base.resolve(reference) }
        }
    }

    @Test(arguments: [
        ("skd://key-id", true), ("data:text/plain,hi", true), ("urn:uuid:1234", true),
        ("HTTPS://Other.example/x", false), ("ftp://host/x", true),
    ])
    func otherSchemesAreNotOriginURLs(reference: String, isOther: Bool) throws {
        #expect((try Self.base.resolve(reference) == nil) == isOther)
    }

    @Test func userInfoIsRefused() {
        #expect(throws: ManifestError.self) { try Self.base.resolve("http://user:pw@evil/x") }
        #expect(throws: ManifestError.self) { try OriginURL("http://user@host/x") }
    }

    @Test func percentEncodingAndPortsSurvive() throws {
        let b = try OriginURL("https://cdn.example.com:8443/v%20d/a%2Fb/index.m3u8?t=a%2Fb%3D&x=1")
        #expect(b.port == 8443)
        #expect(b.host == "cdn.example.com")
        #expect(try b.resolve("seg%201.ts?k=%2F")?.string == "https://cdn.example.com:8443/v%20d/a%2Fb/seg%201.ts?k=%2F")
        #expect(try b.resolve("[::1]")?.string == "https://cdn.example.com:8443/v%20d/a%2Fb/[::1]")
        let v6 = try OriginURL("http://[2001:db8::1]:8080/a/b.m3u8")
        #expect(v6.host == "[2001:db8::1]")
        #expect(v6.port == 8080)
    }
}

@Suite("MD5 for derived xresids")
struct MD5Tests {
    // RFC 1321 appendix A.5.
    @Test(arguments: [
        ("", "d41d8cd98f00b204e9800998ecf8427e"),
        ("a", "0cc175b9c0f1b6a831c399e269772661"),
        ("abc", "900150983cd24fb0d6963f7d28e17f72"),
        ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
        ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
        ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"),
        (String(repeating: "1234567890", count: 8), "57edf4a22be3c955ac49da2e2107b67a"),
    ])
    func rfc1321Vectors(input: String, digest: String) {
        #expect(MD5.hex(Array(input.utf8)) == digest)
    }
}
