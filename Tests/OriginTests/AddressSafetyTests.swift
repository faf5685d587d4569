import Testing

import Origin

/// SPEC section 5 without `allow_origins`: any host, but only public addresses, checked on the
/// address libcurl is about to connect to. Every request here is refused inside the
/// open-socket callback, before a socket exists: no packet leaves for 10.0.0.1 or
/// 169.254.169.254, and the loopback origin never sees a request.
@Suite("Address safety (SSRF)")
struct AddressSafetyTests {
    static let loopbackForms = [
        "http://127.0.0.1:PORT/", "http://localhost:PORT/", "http://LocalHost:PORT/",
        "http://0x7f000001:PORT/", "http://2130706433:PORT/", "http://0177.0.0.1:PORT/",
        "http://127.1:PORT/", "http://[::1]:PORT/", "http://[::ffff:127.0.0.1]:PORT/",
        "http://0.0.0.0:PORT/", "https://127.0.0.1:PORT/",
    ]

    @Test func loopbackInEveryFormIsRefused() async throws {
        let origin = try await FaultOrigin.start()
        // The control: the same request does reach the origin when allowed.
        let allowed = makeClient(allowing: origin)
        _ = try await allowed.fetch(OriginRequest(url: origin.url("/bytes/1?key=ssrf"))).body.collect(upTo: 10)
        #expect(try await origin.counts("ssrf").requests == 1)

        let client = makeClient()
        for form in Self.loopbackForms {
            let url = form.replacingOccurrences(of: "PORT", with: "\(origin.port)") + "bytes/1?key=ssrf"
            let error = await failure { try await client.fetch(OriginRequest(url: url)) }
            #expect(error?.code == .forbiddenAddress, "\(url): \(String(describing: error))")
        }
        #expect(try await origin.counts("ssrf").requests == 1)
        await client.shutdown()
        await allowed.shutdown()
        await origin.stop()
    }

    @Test(arguments: [
        ("http://169.254.169.254/latest/meta-data/", [169, 254, 169, 254]),
        ("http://10.0.0.1/", [10, 0, 0, 1]),
        ("http://[fe80::1]/", [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
        ("http://100.64.0.1/", [100, 64, 0, 1]),
    ] as [(String, [UInt8])])
    func privateLiteralIsRefusedBeforeConnecting(url: String, address: [UInt8]) async throws {
        // The refusal below comes from this classification, run in the open-socket callback
        // before libcurl has a socket: if it ever said "public", stop before sending a packet.
        try #require(AddressPolicy.nonPublicReason(address) != nil)
        let client = makeClient { $0.connectTimeout = .seconds(1) }
        let error = await failure { try await client.fetch(OriginRequest(url: url)) }
        #expect(error?.code == .forbiddenAddress)
        #expect(error?.httpStatusForGateway == 403)
        await client.shutdown()
    }

    @Test func allowListOnlyFetchesListedHosts() async throws {
        let origin = try await FaultOrigin.start()
        let client = makeClient {
            $0.addressPolicy = AddressPolicy(allowOrigins: [AllowedOrigin("localhost:\(origin.port)")!])
        }
        let byName = try await client.fetch(OriginRequest(url: "http://localhost:\(origin.port)/bytes/3?key=al"))
        #expect(try await byName.body.collect(upTo: 10).count == 3)
        let error = await failure { try await client.fetch(OriginRequest(url: origin.url("/bytes/3?key=al"))) }
        #expect(error?.code == .forbiddenAddress)
        #expect(try await origin.counts("al").requests == 1)
        await client.shutdown()
        await origin.stop()
    }

    @Test(arguments: ["ftp://example.com/x", "file:///etc/passwd", "example.com/x", "http://", "gopher://127.0.0.1/"])
    func onlyHTTPURLs(url: String) async {
        let client = makeClient()
        #expect(await failure { try await client.fetch(OriginRequest(url: url)) }?.code == .invalidURL)
        await client.shutdown()
    }
}
