import Foundation
import Testing

import Origin

/// The address classification and the allow-list entries, as pure values.
@Suite("Address policy")
struct AddressPolicyTests {
    static func bytes(_ text: String) -> [UInt8] {
        if text.contains(":") {
            var a = in6_addr()
            precondition(inet_pton(AF_INET6, text, &a) == 1, text)
            return withUnsafeBytes(of: &a) { Array($0) }
        }
        var a = in_addr()
        precondition(inet_pton(AF_INET, text, &a) == 1, text)
        return withUnsafeBytes(of: &a) { Array($0) }
    }

    @Test(arguments: [
        "0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.255", "127.0.0.1",
        "127.255.0.9", "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.8", "192.0.2.1",
        "192.168.1.1", "198.18.0.1", "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250",
        "240.0.0.1", "255.255.255.255",
        "::", "::1", "::ffff:127.0.0.1", "::ffff:10.1.2.3", "::ffff:169.254.169.254", "::127.0.0.1",
        "64:ff9b::10.0.0.1", "64:ff9b::7f00:1", "64:ff9b:1::1", "2002:7f00:1::1", "2002:c0a8:0101::",
        "fc00::1", "fd12:3456::1", "fe80::1", "febf::1", "fec0::1", "ff02::1", "2001:db8::1", "100::1",
    ])
    func notPublic(address: String) {
        #expect(AddressPolicy.nonPublicReason(Self.bytes(address)) != nil)
    }

    @Test(arguments: [
        "1.1.1.1", "8.8.8.8", "100.63.255.255", "100.128.0.1", "172.15.255.255", "172.32.0.1",
        "169.253.0.1", "192.169.0.1", "93.184.216.34", "223.255.255.255",
        "2606:4700::1111", "2a00:1450:4001::200e", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:0808:0808::1",
    ])
    func isPublic(address: String) {
        #expect(AddressPolicy.nonPublicReason(Self.bytes(address)) == nil)
    }

    @Test func allowListEntries() throws {
        let exact = try #require(AllowedOrigin("CDN.Example.com"))
        #expect(exact.matches(host: "cdn.example.com", port: 80))
        #expect(exact.matches(host: "cdn.example.com.", port: 8443))
        #expect(!exact.matches(host: "x.cdn.example.com", port: 80))

        let withPort = try #require(AllowedOrigin("127.0.0.1:8080"))
        #expect(withPort.matches(host: "127.0.0.1", port: 8080))
        #expect(!withPort.matches(host: "127.0.0.1", port: 8081))

        let wildcard = try #require(AllowedOrigin("*.example.com"))
        #expect(wildcard.matches(host: "a.example.com", port: 443))
        #expect(wildcard.matches(host: "a.b.example.com", port: 443))
        #expect(!wildcard.matches(host: "example.com", port: 443))
        #expect(!wildcard.matches(host: "badexample.com", port: 443))

        let v6 = try #require(AllowedOrigin("[::1]:9000"))
        #expect(v6.matches(host: "[::1]", port: 9000))
        #expect(v6.description == "[::1]:9000")

        for bad in ["", ":80", "host:0", "host:99999", "http://host", "host/path", "*.", "[::1"] {
            #expect(AllowedOrigin(bad) == nil, "\(bad)")
        }
    }

    @Test func gatewayStatuses() {
        #expect(OriginError(.forbiddenAddress, "").httpStatusForGateway == 403)
        #expect(OriginError(.timeout, "").httpStatusForGateway == 504)
        for code in [OriginError.Code.connection, .tooLarge, .tooManyRedirects, .badRedirect, .cancelled] {
            #expect(OriginError(code, "").httpStatusForGateway == 502)
        }
        #expect(OriginError(.invalidURL, "").httpStatusForGateway == 400)
    }
}
