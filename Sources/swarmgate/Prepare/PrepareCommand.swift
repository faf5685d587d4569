import ArgumentParser
import Foundation
import Gateway
import Origin

/// `swarmgate prepare URL`: asks a gateway to prepare an object, or every object of a playlist
/// or an MPD (SPEC section 4), through its `POST /prepare`. With `--wait`, follows the jobs
/// (the tracker's, for a node in a swarm) until the stream's objects are all done.
struct PrepareCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prepare", abstract: "Have a gateway fetch and checksum an object or a whole stream (HLS playlist or DASH MPD) ahead of players.")

    @Argument(help: "An origin URL (or a proxy URL of the gateway): a media object, or an HLS playlist or a DASH MPD whose objects are all prepared.") var url: String
    @Option(help: "The stream's xresid (default: derived from the URL's host and path).") var xresid: String?
    @Option(help: "The gateway.") var gateway: String = "http://127.0.0.1:8080"
    @Flag(help: "Wait until every queued object of the stream is prepared (exit 1 if one failed).") var wait = false
    @Option(name: .customLong("admin-token-file"), help: "A file holding the gateway's admin token (or set SWARMGATE_ADMIN_TOKEN); without one, the gateway answers loopback callers only.") var adminTokenFile: String?

    func run() async throws {
        try Swarmgate.requireSystemLibraries(crypto: false)
        var base = gateway
        while base.hasSuffix("/") { base.removeLast() }
        let token: String?
        do { token = try AdminAccess.token(file: adminTokenFile, environment: ProcessInfo.processInfo.environment) } catch {
            throw ValidationError(error.message)
        }
        let client = try Self.client(for: [base], adminToken: token)
        defer { Task { await client.adapter.client.shutdown() } }
        var fields: [String: String] = ["url": url]
        if let xresid { fields["xresid"] = xresid }
        let (status, body) = try await Self.call(client, base + "/prepare", method: .post, body: try JSONSerialization.data(withJSONObject: fields))
        var answer = (try? JSONSerialization.jsonObject(with: body) as? [String: Any]) ?? [:]
        // The object ids (thousands, for a long VOD) are for --wait, not for the reader.
        let objects = answer.removeValue(forKey: "objects") as? [String] ?? []
        let shown = try? JSONSerialization.data(withJSONObject: answer, options: [.sortedKeys])
        print(String(decoding: status == 202 ? shown ?? body : body, as: UTF8.self))
        if Self.refusedTheCaller(status, body) { StandardError.write("swarmgate prepare: \(Self.adminHint)\n") }
        guard status == 202 else { throw ExitCode(1) }
        guard wait else { return }
        guard objects.count == answer["queued"] as? Int ?? 0 else {
            StandardError.write("swarmgate prepare: the gateway does not name the objects it queued; --wait needs a gateway of this version\n")
            throw ExitCode(1)
        }
        // A node in a swarm names its tracker's list, where the tracker's registry has them.
        let jobsURL = answer["jobs"] as? String ?? base + "/jobs"
        let jobsClient = jobsURL.hasPrefix(base + "/") ? client : try Self.client(for: [jobsURL], adminToken: token)
        defer { if jobsClient.adapter !== client.adapter { Task { await jobsClient.adapter.client.shutdown() } } }
        try await Self.follow(objects, at: jobsURL + "/status", client: jobsClient)
    }

    /// Asks `statusURL` (`POST /jobs/status`, `statusBatch` ids at a time) how the `objects`
    /// stand until none has been queued or running for a second, then reports. Gives up (exit
    /// 1) when, for `patience` on end, the answer has been an error, or nothing moved while no
    /// job of the gateway ran (objects never queued there, paused, or left waiting); jobs of
    /// other streams running ahead of these keep it waiting.
    static func follow(_ objects: [String], at statusURL: String, client: GatewayAPI, patience: Duration = .seconds(30)) async throws {
        let asks = try stride(from: 0, to: objects.count, by: statusBatch).map { i in
            try JSONSerialization.data(withJSONObject: ["ids": Array(objects[i..<min(i + statusBatch, objects.count)])])
        }
        let every = Duration.milliseconds(min(5000, max(250, objects.count / 10)))
        var last: [String: Int] = [:]
        var since = ContinuousClock.now
        var problem = ""
        var settled: ContinuousClock.Instant?
        while true {
            var counts: [String: Int]? = [:]
            var refused: Int?
            for ask in asks where counts != nil && refused == nil {
                do {
                    let (code, reply) = try await Self.exchange(client, statusURL, method: .post, body: ask)
                    if code == 200, let part = try? JSONSerialization.jsonObject(with: reply) as? [String: Int] {
                        counts?.merge(part, uniquingKeysWith: +)
                    } else if Self.refusedTheCaller(code, reply) {
                        refused = code
                    } else {
                        (counts, problem) = (nil, "answered \(code)")
                    }
                } catch {
                    (counts, problem) = (nil, "\(error)")
                }
            }
            if let refused {
                // Not a passing state: no wait makes it answer.
                StandardError.write("swarmgate prepare: \(statusURL) answered \(refused): \(Self.adminHint)\n")
                throw ExitCode(1)
            }
            if let counts {
                func n(_ state: String) -> Int { counts[state] ?? 0 }
                let open = n("queued") + n("running") + n("paused") + n("unknown")
                if open > 0 { settled = nil } else if settled == nil { settled = ContinuousClock.now }
                if let settled, ContinuousClock.now - settled >= .seconds(1) {
                    StandardError.write("prepared \(n("done")) of \(objects.count) objects\n")
                    if n("failed") + n("cancelled") > 0 { throw ExitCode(1) }
                    return
                }
                // Progress, or a job under way (a large object takes long, or another stream's
                // queued ahead of these), renews patience.
                if counts != last || n("running") > 0 || n("queueRunning") > 0 { (last, since) = (counts, ContinuousClock.now) }
                problem = "nothing moved: \(n("queued")) queued, \(n("paused")) paused, \(n("unknown")) never queued there, of \(objects.count)"
            }
            guard ContinuousClock.now - since < patience else {
                StandardError.write("swarmgate prepare: \(statusURL): \(problem)\n")
                throw ExitCode(1)
            }
            try await Task.sleep(for: every)
        }
    }

    /// Whether an answer refuses the caller (no admin token, or not on loopback), not what it
    /// asked for: a 403 for an origin the gateway may not fetch is no matter of tokens.
    static func refusedTheCaller(_ status: Int, _ body: Data) -> Bool {
        status == 401 || (status == 403 && String(decoding: body, as: UTF8.self).contains(AdminAccess.notLocalMessage))
    }

    /// What to do when a gateway or tracker refuses the operator's endpoints.
    static let adminHint = "/prepare and /jobs answer loopback callers only, or callers with the admin token: give the gateway and its tracker --admin-token-file FILE (or SWARMGATE_ADMIN_TOKEN), and this command the same"

    /// The ids one status request carries (a gateway takes 50,000).
    static let statusBatch = 20_000

    /// One call to the gateway's API through `client`: (status, body).
    static func exchange(_ client: GatewayAPI, _ url: String, method: OriginRequest.Method, body: Data?) async throws(OriginError) -> (Int, Data) {
        var headers = body == nil ? [] : [(name: "Content-Type", value: "application/json")]
        if let token = client.token { headers.append((name: "Authorization", value: "Bearer " + token)) }
        let response = try await client.adapter.client.fetch(OriginRequest(url: url, method: method, headers: headers, body: body.map { [UInt8]($0) } ?? []))
        return (response.status, Data(try await response.body.collect(upTo: 64 << 20)))
    }

    /// A client for the gateway's API at `urls` (and nothing else); it answers /prepare once
    /// it has read the playlist and each of its variants from the origin, which can take
    /// long for a large master playlist.
    static func client(for urls: [String], adminToken: String?) throws -> GatewayAPI {
        do {
            let adapter = try OriginClientAdapter(allowOrigins: urls.map(HealthCommand.authority(of:)), idleTimeout: .seconds(120), maxObjectSize: 64 << 20)
            return GatewayAPI(adapter: adapter, token: adminToken)
        } catch {
            throw ValidationError("bad gateway URL \(urls.joined(separator: ", "))")
        }
    }

    /// One call to the gateway's API through `client`: (status, body). A failure to connect
    /// ends the command (exit 1).
    static func call(_ client: GatewayAPI, _ url: String, method: OriginRequest.Method, body: Data?) async throws -> (Int, Data) {
        do {
            return try await exchange(client, url, method: method, body: body)
        } catch {
            StandardError.write("swarmgate prepare: \(url): \(error)\n")
            throw ExitCode(1)
        }
    }
}

/// A gateway's (or tracker's) API: the client that reaches it, and the admin token its
/// operator's endpoints ask for, if any.
struct GatewayAPI: Sendable {
    let adapter: OriginClientAdapter
    let token: String?
}
