import Testing

import Origin

/// Redirects are followed by the client, at most 5, each hop checked against the allow list
/// (and, without one, by the address check on connect).
@Suite("Redirects")
struct RedirectTests {
    @Test(arguments: [301, 302, 303, 307, 308])
    func followed(code: Int) async throws {
        try await withOrigin { origin, client in
            let response = try await client.fetch(OriginRequest(url: origin.url("/redirect?to=/bytes/10&code=\(code)")))
            #expect(response.status == 200)
            #expect(response.effectiveURL == origin.url("/bytes/10"))
            #expect(try await response.body.collect(upTo: 100).count == 10)
        }
    }

    @Test func fiveHopsAreFineSixAreNot() async throws {
        try await withOrigin { origin, client in
            let five = try await client.fetch(OriginRequest(url: origin.url("/hops/5")))
            #expect(five.status == 200)
            #expect(five.effectiveURL == origin.url("/hops/0"))
            let error = await failure { try await client.fetch(OriginRequest(url: origin.url("/hops/6"))) }
            #expect(error?.code == .tooManyRedirects)
        }
    }

    @Test func redirectWithoutUsableLocation() async throws {
        try await withOrigin { origin, client in
            let error = await failure {
                try await client.fetch(OriginRequest(url: origin.url("/redirect?to=ftp://127.0.0.1/x")))
            }
            #expect(error?.code == .badRedirect)
        }
    }

    /// The allowed origin sends the client elsewhere: refused before any connection.
    @Test(arguments: ["http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/", "http://192.168.1.1:8080/"])
    func allowedOriginRedirectsToPrivateAddress(target: String) async throws {
        try await withOrigin { origin, client in
            let error = await failure { try await client.fetch(OriginRequest(url: origin.url("/redirect?to=\(target)"))) }
            #expect(error?.code == .forbiddenAddress)
            #expect(error?.httpStatusForGateway == 403)
        }
    }

    @Test func allowedOriginRedirectsToAnotherLoopbackOrigin() async throws {
        let origin = try await FaultOrigin.start()
        let other = try await FaultOrigin.start()
        let client = makeClient(allowing: origin)
        for target in ["http://localhost:\(other.port)/bytes/1?key=hit", other.url("/bytes/1?key=hit")] {
            let error = await failure { try await client.fetch(OriginRequest(url: origin.url("/redirect?to=\(target)"))) }
            #expect(error?.code == .forbiddenAddress)
        }
        #expect(try await other.counts("hit").requests == 0)
        await client.shutdown()
        await origin.stop()
        await other.stop()
    }
}
