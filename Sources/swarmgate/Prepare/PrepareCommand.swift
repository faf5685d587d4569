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

    func run() async throws {
        try Swarmgate.requireSystemLibraries(crypto: false)
        var base = gateway
        while base.hasSuffix("/") { base.removeLast() }
        let client = try Self.client(for: [base])
        defer { Task { await client.client.shutdown() } }
        var fields: [String: String] = ["url": url]
        if let xresid { fields["xresid"] = xresid }
        let (status, body) = try await Self.call(client, base + "/prepare", method: .post, body: try JSONSerialization.data(withJSONObject: fields))
        print(String(decoding: body, as: UTF8.self))
        guard status == 202 else { throw ExitCode(1) }
        guard wait else { return }
        let answer = (try? JSONSerialization.jsonObject(with: body) as? [String: Any]) ?? [:]
        let stream = answer["xresid"] as? String
        let queued = answer["queued"] as? Int ?? 0
        // A node in a swarm names its tracker's list, where the tracker's registry shows them.
        let jobsURL = answer["jobs"] as? String ?? base + "/jobs"
        let jobsClient = jobsURL.hasPrefix(base + "/") ? client : try Self.client(for: [jobsURL])
        defer { if jobsClient !== client { Task { await jobsClient.client.shutdown() } } }
        // The objects reach a tracker's list a moment after the answer; none there for this
        // long means they are not listed where we look.
        let listedWithin = ContinuousClock.now + .seconds(30)
        while true {
            try await Task.sleep(for: .milliseconds(250))
            let (_, jobs) = try await Self.call(jobsClient, jobsURL, method: .get, body: nil)
            let list = ((try? JSONSerialization.jsonObject(with: jobs) as? [String: Any])?["jobs"] as? [[String: Any]] ?? [])
                .filter { $0["xresid"] as? String == stream }
            let states = list.compactMap { $0["state"] as? String }
            if states.isEmpty && queued > 0 {
                guard ContinuousClock.now < listedWithin else {
                    FileHandle.standardError.write(Data("swarmgate prepare: \(jobsURL) lists none of the \(queued) objects queued\n".utf8))
                    throw ExitCode(1)
                }
                continue
            }
            if states.allSatisfy({ ["done", "failed", "cancelled"].contains($0) }) {
                FileHandle.standardError.write(Data("prepared \(states.filter { $0 == "done" }.count) of \(states.count) objects\n".utf8))
                if states.contains("failed") { throw ExitCode(1) }
                return
            }
        }
    }

    /// A client for the gateway's API at `urls` (and nothing else); it answers /prepare once
    /// it has read the playlist and each of its variants from the origin, which can take
    /// long for a large master playlist.
    static func client(for urls: [String]) throws -> OriginClientAdapter {
        do {
            return try OriginClientAdapter(allowOrigins: urls.map(HealthCommand.authority(of:)), idleTimeout: .seconds(120), maxObjectSize: 64 << 20)
        } catch {
            throw ValidationError("bad gateway URL \(urls.joined(separator: ", "))")
        }
    }

    /// One call to the gateway's API through `client`: (status, body). A failure to connect
    /// ends the command (exit 1).
    static func call(_ client: OriginClientAdapter, _ url: String, method: OriginRequest.Method, body: Data?) async throws -> (Int, Data) {
        let headers = body == nil ? [] : [(name: "Content-Type", value: "application/json")]
        do {
            let response = try await client.client.fetch(OriginRequest(url: url, method: method, headers: headers, body: body.map { [UInt8]($0) } ?? []))
            return (response.status, Data(try await response.body.collect(upTo: 64 << 20)))
        } catch {
            FileHandle.standardError.write(Data("swarmgate prepare: \(url): \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
