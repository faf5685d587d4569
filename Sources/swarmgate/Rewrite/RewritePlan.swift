import ArgumentParser
import Foundation
import Manifest

/// What every rewritten manifest in one run shares.
struct RewriteSettings: Sendable {
    var gateway: String
    var xresid: XResID?
    var inheritQuery: InheritQuery
    var keyURIs: KeyURIMode
}

/// One manifest to rewrite: where it comes from, its origin URL and where the result goes.
struct RewriteJob: Sendable {
    enum Source: Sendable { case stdin, file(String) }
    enum Destination: Sendable { case stdout, file(String) }

    var source: Source
    var url: OriginURL
    var destination: Destination

    var name: String {
        switch source {
        case .stdin: return "-"
        case .file(let path): return path
        }
    }
}

/// The jobs of one `swarmgate rewrite` run, worked out from its INPUTs (SPEC section 4).
struct RewritePlan: Sendable {
    var jobs: [RewriteJob] = []
    /// INPUTs that could not be read at all (named on stderr, counted as failures).
    var missing: [String] = []
    var settings: RewriteSettings

    static let extensions = [".m3u8", ".m3u", ".mpd"]

    init(inputs: [String], baseURL: OriginURL, output: String?, settings: RewriteSettings) throws {
        self.settings = settings
        let fm = FileManager.default
        func isDirectory(_ path: String) -> Bool? {
            var dir: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &dir) else { return nil }
            return dir.boolValue
        }
        if inputs.count == 1, inputs[0] == "-" || isDirectory(inputs[0]) == false {
            let source: RewriteJob.Source = inputs[0] == "-" ? .stdin : .file(inputs[0])
            // An --output that is a folder takes the file under its own name, as cp does (it
            // failed: "Is a directory").
            let destination = output.map { out -> RewriteJob.Destination in
                guard inputs[0] != "-", isDirectory(out) == true else { return .file(out) }
                return .file((out as NSString).appendingPathComponent((inputs[0] as NSString).lastPathComponent))
            }
            jobs = [RewriteJob(source: source, url: baseURL, destination: destination ?? .stdout)]
            return
        }
        // One INPUT that is not there: a failure of that input (it said --output was needed).
        if inputs.count == 1, output == nil, isDirectory(inputs[0]) == nil {
            missing = inputs
            return
        }
        guard let output else {
            throw ValidationError("--output is required for a folder or for several inputs")
        }
        let folderBase = try Self.folderURL(baseURL)
        for input in inputs {
            switch isDirectory(input) {
            case nil:
                missing.append(input)
            case true?:
                for relative in try Self.manifests(below: input) {
                    jobs.append(RewriteJob(
                        source: .file((input as NSString).appendingPathComponent(relative)),
                        url: try Self.url(of: relative, in: folderBase),
                        destination: .file((output as NSString).appendingPathComponent(relative))))
                }
            case false?:
                if input == "-" {
                    throw ValidationError("stdin (-) can only be the only INPUT")
                }
                let name = (input as NSString).lastPathComponent
                jobs.append(RewriteJob(
                    source: .file(input), url: try Self.url(of: name, in: folderBase),
                    destination: .file((output as NSString).appendingPathComponent(name))))
            }
        }
        // Two inputs of one name (a file and a folder's, or two folders') would be written to
        // one output file, the first lost.
        var written: [String: String] = [:]
        for job in jobs {
            guard case .file(let destination) = job.destination, case .file(let source) = job.source else { continue }
            if let other = written.updateValue(source, forKey: destination) {
                throw ValidationError("\(other) and \(source) would both be written to \(destination)")
            }
        }
    }

    /// Every manifest file below `folder`, as paths relative to it, sorted. Symbolic links to
    /// folders are not followed, so a link loop cannot make the walk endless.
    static func manifests(below folder: String) throws -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: folder) else {
            throw ValidationError("cannot read folder \(folder)")
        }
        var found: [String] = []
        while let relative = walker.nextObject() as? String {
            let lower = relative.lowercased()
            guard extensions.contains(where: { lower.hasSuffix($0) }) else { continue }
            var dir: ObjCBool = false
            let full = (folder as NSString).appendingPathComponent(relative)
            // A link to a folder is skipped; one that cannot be found by the name the walk
            // gave (not UTF-8, so not given exactly; or a broken link) fails by that name.
            if !FileManager.default.fileExists(atPath: full, isDirectory: &dir) || !dir.boolValue {
                found.append(relative)
            }
        }
        return found.sorted()
    }

    /// The base URL as a folder: its path ends with "/".
    static func folderURL(_ url: OriginURL) throws -> OriginURL {
        if url.path.hasSuffix("/") { return url }
        return OriginURL(isHTTPS: url.isHTTPS, authority: url.authority, path: url.path + "/", query: url.query)
    }

    /// The origin URL of a file at `relative` below the folder at `base`, each name encoded as
    /// the gateway writes and keys paths (`URLBytes.pathSegment`), so that the stream's xresid
    /// and object keys are those the gateway gives the same files. The folder URL's query
    /// carries over.
    static func url(of relative: String, in base: OriginURL) throws -> OriginURL {
        let encoded = relative.split(separator: "/", omittingEmptySubsequences: false).map { URLBytes.pathSegment(String($0)) }.joined(separator: "/")
        return OriginURL(isHTTPS: base.isHTTPS, authority: base.authority, path: base.path + encoded, query: base.query)
    }
}

