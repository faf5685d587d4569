import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Where the tests keep their files: one folder per test process under the system's
/// temporary folder, removed when the process exits. A run that was killed leaves its folder
/// behind; the next run removes the folders of processes that no longer exist. (Before this,
/// every run left its gateways' caches in /tmp, 2 GiB among them, until the disk was full.)
public enum Scratch {
    static let prefix = "swarmgate-tests-"

    /// This process's folder, made on first use.
    public static let root: URL = {
        let temporary = FileManager.default.temporaryDirectory
        removeFoldersOfEndedRuns(in: temporary)
        let root = temporary.appendingPathComponent(prefix + String(getpid()))
        try? FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: Scratch.root) }
        return root
    }()

    /// A new name under `root` (nothing is made): `name-<UUID><suffix>`.
    public static func url(_ name: String, suffix: String = "") -> URL {
        root.appendingPathComponent("\(name)-\(UUID().uuidString)\(suffix)")
    }

    /// `url(_:suffix:)` as a path.
    public static func path(_ name: String, suffix: String = "") -> String {
        url(name, suffix: suffix).path
    }

    /// Removes `swarmgate-tests-<pid>` folders whose process has ended.
    static func removeFoldersOfEndedRuns(in temporary: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
        for name in names where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count)), pid != getpid() else { continue }
            if kill(pid, 0) == -1 && errno == ESRCH {
                try? FileManager.default.removeItem(at: temporary.appendingPathComponent(name))
            }
        }
    }
}
