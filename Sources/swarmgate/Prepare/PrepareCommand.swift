import ArgumentParser
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `swarmgate prepare URL`: asks a gateway to prepare an object, or every object of a playlist
/// (SPEC section 4), through its `POST /prepare`. With `--wait`, follows the jobs until the
/// stream's objects are all done.
struct PrepareCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prepare", abstract: "Have a gateway fetch and checksum an object or a whole playlist ahead of players.")

    @Argument(help: "An origin URL (or a proxy URL of the gateway) of a media object or a playlist.") var url: String
    @Option(help: "The stream's xresid (default: derived from the URL's host and path).") var xresid: String?
    @Option(help: "The gateway (default http://127.0.0.1:8080).") var gateway: String = "http://127.0.0.1:8080"
    @Flag(help: "Wait until every queued object of the stream is prepared (exit 1 if one failed).") var wait = false

    func run() async throws {
        var base = gateway
        while base.hasSuffix("/") { base.removeLast() }
        var fields: [String: String] = ["url": url]
        if let xresid { fields["xresid"] = xresid }
        let (status, body) = try await Self.call(base + "/prepare", method: "POST", body: try JSONSerialization.data(withJSONObject: fields))
        print(String(decoding: body, as: UTF8.self))
        guard status == 202 else { throw ExitCode(1) }
        guard wait else { return }
        let stream = (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["xresid"] as? String
        while true {
            try await Task.sleep(for: .milliseconds(250))
            let (_, jobs) = try await Self.call(base + "/jobs", method: "GET", body: nil)
            let list = ((try? JSONSerialization.jsonObject(with: jobs) as? [String: Any])?["jobs"] as? [[String: Any]] ?? [])
                .filter { $0["xresid"] as? String == stream }
            let states = list.compactMap { $0["state"] as? String }
            if states.allSatisfy({ ["done", "failed", "cancelled"].contains($0) }) {
                FileHandle.standardError.write(Data("prepared \(states.filter { $0 == "done" }.count) of \(states.count) objects\n".utf8))
                if states.contains("failed") { throw ExitCode(1) }
                return
            }
        }
    }

    static func call(_ url: String, method: String, body: Data?) async throws -> (Int, Data) {
        guard let u = URL(string: url) else { throw ValidationError("bad gateway URL \(url)") }
        var request = URLRequest(url: u)
        request.httpMethod = method
        request.httpBody = body
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        do {
            let (data, response) = try await URLSession.shared.data(for: request)
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
        } catch {
            FileHandle.standardError.write(Data("swarmgate prepare: \(url): \(error.localizedDescription)\n".utf8))
            throw ExitCode(1)
        }
    }
}
