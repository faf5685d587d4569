import Foundation
import Manifest

/// Runs a RewritePlan: rewrites every manifest in parallel, gives each media playlist that a
/// master in the same run references the master's xresid and variables (as the gateway
/// would), then writes each result whole or not at all.
struct BatchRewrite: Sendable {
    let plan: RewritePlan

    /// What rewriting one job gave.
    struct Outcome: Sendable {
        var output: [UInt8]
        var format: ManifestFormat
        var xresid: XResID
        var hls: HLSRewrite?
    }

    /// The context a master hands to the playlists it references.
    struct Parent: Sendable {
        var xresid: XResID
        var variables: [String: String]
    }

    /// Returns how many inputs failed.
    func run() async -> Int {
        var failures = 0
        for name in plan.missing {
            report(name, "no such file or folder")
            failures += 1
        }
        let jobs = plan.jobs
        // What a run killed mid-write left beside the outputs.
        let folders = Set(jobs.compactMap { job -> String? in
            guard case .file(let path) = job.destination else { return nil }
            let folder = (path as NSString).deletingLastPathComponent
            return folder.isEmpty ? "." : folder
        })
        for folder in folders { AtomicFile.removeStaleTemporaries(in: folder) }
        var results = await rewriteAll(jobs.indices.map { ($0, nil) })

        // Second pass for playlists that a master of this run references.
        var parents: [String: Parent] = [:]
        for case .success(let outcome) in results.values {
            guard let hls = outcome.hls, hls.kind == .master else { continue }
            for ref in hls.references where Self.playlistRoles.contains(ref.role) {
                parents[Self.key(ref.origin)] = Parent(xresid: outcome.xresid, variables: hls.variables)
            }
        }
        let again: [(Int, Parent?)] = jobs.indices.compactMap { i in
            guard let parent = parents[Self.key(jobs[i].url)] else { return nil }
            if case .success(let o) = results[i], o.format != .hls || o.hls?.kind == .master { return nil }
            return (i, parent)
        }
        if !again.isEmpty {
            let redone = await rewriteAll(again)
            for (i, _) in again { results[i] = redone[i] }
        }

        for (i, job) in jobs.enumerated() {
            switch results[i] {
            case .success(let outcome):
                do {
                    try write(outcome.output, to: job.destination)
                } catch {
                    report(job.name, "cannot write output: \(error)")
                    failures += 1
                }
            case .failure(let message):
                report(job.name, message)
                failures += 1
            case nil:
                break
            }
        }
        return failures
    }

    static let playlistRoles: Set<HLSReference.Role> = [.variant, .iFrameVariant, .imageVariant, .rendition]

    static func key(_ url: OriginURL) -> String { url.authority.lowercased() + url.path }

    enum Result: Sendable {
        case success(Outcome)
        case failure(String)
    }

    /// Rewrites the jobs at these indices, at most one per core at a time.
    func rewriteAll(_ work: [(Int, Parent?)]) async -> [Int: Result] {
        let width = max(1, ProcessInfo.processInfo.activeProcessorCount)
        return await withTaskGroup(of: (Int, Result).self) { group in
            var pending = work[...]
            var results: [Int: Result] = [:]
            for _ in 0..<width {
                guard let (i, parent) = pending.popFirst() else { break }
                group.addTask { (i, self.rewrite(plan.jobs[i], parent: parent)) }
            }
            for await (i, result) in group {
                results[i] = result
                if let (j, parent) = pending.popFirst() {
                    group.addTask { (j, self.rewrite(plan.jobs[j], parent: parent)) }
                }
            }
            return results
        }
    }

    func rewrite(_ job: RewriteJob, parent: Parent?) -> Result {
        let limit = 16 << 20
        let input: InputBytes
        do {
            input = try read(job.source, limit: limit)
        } catch {
            return .failure("\(error)")
        }
        return input.withBytes { bytes in rewrite(bytes, of: job, parent: parent) }
    }

    func rewrite(_ bytes: UnsafeBufferPointer<UInt8>, of job: RewriteJob, parent: Parent?) -> Result {
        let path: String? = if case .file(let p) = job.source { p } else { nil }
        guard let format = ManifestFormat.detect(body: bytes, path: path) else {
            return .failure("not an HLS playlist or a DASH MPD")
        }
        let xresid = plan.settings.xresid ?? parent?.xresid ?? XResID(derivedFrom: job.url)
        switch format {
        case .hls:
            var options = HLSRewriter.Options()
            options.gateway = plan.settings.gateway
            options.xresid = xresid
            options.inheritQuery = plan.settings.inheritQuery
            options.keyURIs = plan.settings.keyURIs
            // As the gateway would: its URL there carries them (when they are short enough to
            // travel), and it passes them on.
            options.variablesParameter = parent.flatMap { PlaylistVariables.encode($0.variables) }
            options.importedVariables = options.variablesParameter == nil ? [:] : parent?.variables ?? [:]
            options.collectReferences = plan.jobs.count > 1
            do {
                let result = try HLSRewriter(playlistURL: job.url, options: options).rewrite(bytes)
                return .success(Outcome(output: result.output, format: .hls, xresid: xresid, hls: result))
            } catch {
                return .failure("\(error)")
            }
        case .dash:
            var options = DASHRewriter.Options()
            options.gateway = plan.settings.gateway
            options.xresid = xresid
            options.inheritQuery = plan.settings.inheritQuery
            do {
                let result = try DASHRewriter(mpdURL: job.url, options: options).rewrite(Array(bytes))
                return .success(Outcome(output: result.output, format: .dash, xresid: xresid, hls: nil))
            } catch {
                return .failure("\(error)")
            }
        }
    }


    func read(_ source: RewriteJob.Source, limit: Int) throws -> InputBytes {
        switch source {
        case .stdin:
            return try RawFile.readAll(fd: STDIN_FILENO, limit: limit)
        case .file(let path):
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw InputError(description: "cannot open: \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            return try RawFile.readAll(fd: fd, limit: limit)
        }
    }

    func write(_ bytes: [UInt8], to destination: RewriteJob.Destination) throws {
        switch destination {
        case .stdout:
            try RawFile.writeAll(fd: STDOUT_FILENO, bytes)
        case .file(let path):
            try AtomicFile.write(bytes, to: path)
        }
    }

    func report(_ name: String, _ message: String) {
        StandardError.write("swarmgate rewrite: \(name): \(message)\n")
    }
}
