import Testing

import Origin

/// Connection errors and 5xx answers are retried with backoff, but only before the response
/// is handed over: a body that fails after its first bytes is never fetched again.
@Suite("Retries")
struct RetryTests {
    @Test func serverErrorsThenSuccess() async throws {
        try await withOrigin({ $0.retries = 2 }) { origin, client in
            let response = try await client.fetch(OriginRequest(url: origin.url("/flaky/twice/2")))
            #expect(response.status == 200)
            #expect(try await response.body.collect(upTo: 100) == Array("ok".utf8))
            #expect(try await origin.counts("twice").requests == 3)
        }
    }

    /// An answer that is not HTTP on a reused connection (the stray body of an origin's 204,
    /// read as the start of the next answer: curl's "HTTP/0.9") is a connection error, asked
    /// again on another connection: it was reported as a bad URL, and the request failed.
    @Test func anAnswerThatIsNotHTTPIsAskedAgain() async throws {
        try await withOrigin({ $0.retries = 2 }) { origin, client in
            let empty = try await client.fetch(OriginRequest(url: origin.url("/nocontent")))
            #expect(empty.status == 204)
            _ = try await empty.body.collect(upTo: 100)
            try await Task.sleep(for: .milliseconds(400))  // the stray bytes wait on the connection
            let next = try await client.fetch(OriginRequest(url: origin.url("/bytes/100")))
            #expect(next.status == 200)
            #expect(try await next.body.collect(upTo: 1000).count == 100)
        }
    }

    @Test func retriesRunOut() async throws {
        try await withOrigin({ $0.retries = 2 }) { origin, client in
            let response = try await client.fetch(OriginRequest(url: origin.url("/flaky/always/10")))
            #expect(response.status == 500)
            #expect(try await origin.counts("always").requests == 3)
        }
    }

    /// A POST (the command line's calls to a gateway's API) sends its body and is never
    /// retried: it need not be idempotent.
    @Test func aPostSendsItsBodyAndIsNotRetried() async throws {
        try await withOrigin({ $0.retries = 2 }) { origin, client in
            let json = Array(#"{"url":"http://cdn.example.com/a.ts"}"#.utf8)
            let echoed = try await client.fetch(OriginRequest(url: origin.url("/echo"), method: .post, headers: [("Content-Type", "application/json")], body: json))
            #expect(echoed.status == 200)
            #expect(try await echoed.body.collect(upTo: 1000) == Array("POST application/json ".utf8) + json)
            let empty = try await client.fetch(OriginRequest(url: origin.url("/echo"), method: .post))
            #expect(try await empty.body.collect(upTo: 1000) == Array("POST - ".utf8))
            let failed = try await client.fetch(OriginRequest(url: origin.url("/flaky/posted/10"), method: .post, body: json))
            #expect(failed.status == 500)
            #expect(try await origin.counts("posted").requests == 1, "a GET is retried twice here (retriesRunOut)")
        }
    }

    @Test func noRetryAfterBodyBytes() async throws {
        try await withOrigin({ $0.retries = 2 }) { origin, client in
            let response = try await client.fetch(OriginRequest(url: origin.url("/reset?key=once")))
            #expect(response.status == 200)
            #expect(await failure { try await response.body.collect(upTo: 1 << 20) }?.code == .connection)
            #expect(try await origin.counts("once").requests == 1)
        }
    }

    @Test func connectionRefusedIsRetriedThenReported() async throws {
        // A port nothing listens on: bind one with the origin, stop it, reuse its number.
        let gone = try await FaultOrigin.start()
        let port = gone.port
        await gone.stop()
        let client = makeClient {
            $0.addressPolicy = AddressPolicy(allowOrigins: [AllowedOrigin("127.0.0.1")!])
        }
        let error = await failure { try await client.fetch(OriginRequest(url: "http://127.0.0.1:\(port)/")) }
        #expect(error?.code == .connection)
        #expect(error?.httpStatusForGateway == 502)
        await client.shutdown()
    }
}
