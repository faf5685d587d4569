import Foundation
import Origin

/// Resolved settings of one role: each value from its flag, else its `SWARMGATE_*` variable,
/// else the config file, else its default.
public struct Settings: Sendable {
    public let definitions: [SettingDefinition]
    private var values: [String: String] = [:]
    private var lists: [String: [String]] = [:]
    /// The settings whose value the config file gave.
    private var fromFile: Set<String> = []
    /// The settings whose value a flag, a variable or the config file gave (not a default).
    public private(set) var given: Set<String> = []

    /// `flags` maps setting names to what the command line gave (lists comma-separated);
    /// `environment` is the process environment; the config file is the `config` setting's.
    public init(
        _ definitions: [SettingDefinition], flags: [String: String], environment: [String: String],
        readFile: (String) throws -> String = { try String(contentsOfFile: $0, encoding: .utf8) }
    ) throws(SettingsError) {
        self.definitions = definitions
        let names = Set(definitions.map(\.name))
        for name in flags.keys where !names.contains(name) {
            throw SettingsError("unknown setting '\(name)'")
        }
        let configPath = flags["config"] ?? environment["SWARMGATE_CONFIG"]
        var file: [String: ConfigFile.Value] = [:]
        if let configPath {
            let text: String
            do { text = try readFile(configPath) } catch {
                throw SettingsError("cannot read config file \(configPath): \(Self.fileProblem(configPath, error))")
            }
            file = try ConfigFile.parse(text, path: configPath)
            let keys = Dictionary(definitions.map { ($0.fileKey, $0) }, uniquingKeysWith: { a, _ in a })
            for key in file.keys where keys[key] == nil {
                throw SettingsError("\(configPath): unknown setting '\(key)'")
            }
            // A file does not name another: it would be read by nothing (a silent no-op).
            if let key = definitions.first(where: { $0.name == "config" })?.fileKey, file[key] != nil {
                throw SettingsError("\(configPath): '\(key)' is not read from a config file (give it as --config or SWARMGATE_CONFIG)")
            }
        }
        for d in definitions {
            if let v = flags[d.name] ?? environment[d.environmentVariable] {
                given.insert(d.name)
                values[d.name] = v
                if d.kind == .list { lists[d.name] = Self.splitList(v) }
            } else if let v = file[d.fileKey] {
                fromFile.insert(d.name)
                given.insert(d.name)
                switch (v, d.kind) {
                case (.list(let items), .list): lists[d.name] = items; values[d.name] = items.joined(separator: ",")
                case (.string(let s), .list): lists[d.name] = Self.splitList(s); values[d.name] = s
                case (.bool(let b), .toggle): values[d.name] = b ? "true" : "false"
                case (.string(let s), .text), (.string(let s), .toggle): values[d.name] = s
                case (.integer(let i), .text): values[d.name] = String(i)
                case (.decimal(let n), .text): values[d.name] = n
                default: throw SettingsError("\(configPath ?? ""): '\(d.fileKey)' has the wrong type")
                }
            } else if let v = d.defaultValue {
                values[d.name] = v
                if d.kind == .list { lists[d.name] = Self.splitList(v) }
            }
        }
    }

    /// Why a file could not be read, in a few words (not Foundation's error dump).
    static func fileProblem(_ path: String, _ error: any Error) -> String {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { return "no such file" }
        if isFolder.boolValue { return "it is a folder" }
        if !FileManager.default.isReadableFile(atPath: path) { return "permission denied" }
        return "not UTF-8 text (\((error as NSError).localizedDescription))"
    }

    static func splitList(_ s: String) -> [String] {
        s.split(separator: ",").map { String($0.trimmingASCIISpaces) }.filter { !$0.isEmpty }
    }

    public subscript(_ name: String) -> String? { values[name] }

    /// The file a secret is read from, when a file setting (`app-secret-file`) and a variable
    /// that holds the secret itself (`SWARMGATE_APP_SECRET`) may both give it: the file a flag
    /// or its `SWARMGATE_*_FILE` variable names, else nil when `variable` is set (the caller
    /// reads it), else the file the config file names. Flags, then environment, then the file.
    public func secretFile(_ name: String, unless variable: String, in environment: [String: String]) -> String? {
        guard let path = values[name] else { return nil }
        if fromFile.contains(name), let secret = environment[variable], !secret.isEmpty { return nil }
        return path
    }

    /// A size such as `4GiB`, `512MiB`, `10GB` or `1048576` (bytes), as a byte count.
    public func size(_ name: String) throws(SettingsError) -> Int64? {
        guard let text = values[name]?.trimmingASCIISpaces, !text.isEmpty else { return nil }
        let digits = text.prefix { $0.isNumber || $0 == "." }
        let unit = text.dropFirst(digits.count).trimmingASCIISpaces.lowercased()
        let scale: Double
        switch unit {
        case "", "b": scale = 1
        case "k", "kb": scale = 1e3
        case "kib": scale = 1024
        case "m", "mb": scale = 1e6
        case "mib": scale = 1_048_576
        case "g", "gb": scale = 1e9
        case "gib": scale = 1_073_741_824
        case "t", "tb": scale = 1e12
        case "tib": scale = Double(1 << 40)
        default: throw SettingsError("\(name): unknown unit '\(unit)' (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)")
        }
        guard let n = Double(digits), n >= 0, n * scale < 9e18 else { throw SettingsError("\(name): cannot read '\(text)'") }
        return Int64(n * scale)
    }

    public func list(_ name: String) -> [String] { lists[name] ?? [] }

    public func toggle(_ name: String) throws(SettingsError) -> Bool {
        switch values[name]?.lowercased() {
        case nil, "false", "0", "no": return false
        case "true", "1", "yes": return true
        case let other?: throw SettingsError("\(name) must be true or false, not '\(other)'")
        }
    }
}

/// A setting that cannot be used, named.
public struct SettingsError: Error, Hashable, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
