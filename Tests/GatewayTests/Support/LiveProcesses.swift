import Foundation
import TestScratch

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A child process the tests start and always stop: the gateway, an origin.
final class LiveProcess: @unchecked Sendable {
    // @unchecked: `process` and the pipes are set in init and only read afterwards; the
    // stderr text is guarded by `lock`.
    let process = Process()
    private let errText = LockedText()
    /// Set when stderr reached its end (the child, and whatever inherited the pipe, closed it).
    private let errDone = LockedText()
    private let outPipe = Pipe(), errPipe = Pipe(), inPipe = Pipe()

    init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        process.environment = env
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.standardInput = inPipe
        try process.run()
        // stderr is read by a thread of its own until EOF (the child's exit). Not with a
        // readabilityHandler: libdispatch's event loop could crash on the pipe's descriptor
        // closing under its source while many children come and go.
        let reader = errPipe.fileHandleForReading
        let text = errText, done = errDone
        let thread = Thread {
            while true {
                let d = reader.availableData
                if d.isEmpty { break }
                text.append(String(decoding: d, as: UTF8.self))
            }
            done.append("end")
        }
        thread.start()
    }

    var stderr: String { errText.value }

    /// The first line of stdout (origins print their port there), read on a thread of its own:
    /// tests run on Swift's cooperative threads, as many as cores, and a test blocking one
    /// while a child starts holds up every other test of the process. Empty when no line came
    /// within 2 s of the process's end (a process that inherited the pipe may hold it open:
    /// see Tests/TestScratch/ProgramRun.swift) or within `timeout`.
    func firstStdoutLine(timeout: Duration = .seconds(60)) async -> String {
        let reader = outPipe.fileHandleForReading
        let line = LockedText(), read = LockedText()
        Thread {
            var bytes: [UInt8] = []
            while true {
                let d = reader.readData(ofLength: 1)
                if d.isEmpty || d.first == UInt8(ascii: "\n") { break }
                bytes += d
            }
            line.append(String(decoding: bytes, as: UTF8.self))
            read.append("end")
        }.start()
        let deadline = ContinuousClock.now + timeout
        var ended: ContinuousClock.Instant?
        while read.value.isEmpty && ContinuousClock.now < deadline {
            if ended == nil && process.hasEnded { ended = .now }
            if let ended, ContinuousClock.now - ended > .seconds(2) { break }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return line.value
    }

    /// Waits until stderr matches `pattern`, returning the first capture (without holding a
    /// thread, as `firstStdoutLine`).
    func waitForStderr(_ pattern: Regex<(Substring, Substring)>, timeout: Duration = .seconds(30)) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let m = stderr.firstMatch(of: pattern) { return String(m.1) }
            if process.hasEnded { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("process did not print \(pattern); stderr:\n\(stderr)")
    }

    /// Sends `signal`, and SIGKILL if the process has not exited after `grace`: a child may
    /// inherit a blocked SIGTERM from the test runner. Never `waitUntilExit()` (`hasEnded`).
    func stop(signal: Int32 = SIGTERM, grace: Duration = .seconds(10)) {
        try? inPipe.fileHandleForWriting.close()
        if !process.hasEnded { kill(process.processIdentifier, signal) }
        guard !process.waitForEnd(timeout: grace) else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitForEnd(timeout: .seconds(10))
    }

    /// Sends `signal` (SIGTERM) and waits, without holding a thread, `timeout` at most: the
    /// exit status (nil if it still runs) and how long the stop took.
    func terminate(_ signal: Int32 = SIGTERM, within timeout: Duration) async -> (status: Int32?, took: Duration) {
        let stopping = ContinuousClock.now
        kill(process.processIdentifier, signal)
        let status = await waitForExit(timeout: timeout)
        return (status, ContinuousClock.now - stopping)
    }

    /// Whether the process ended by itself within `timeout`, and its exit status.
    /// Waits without holding a thread: tests run on Swift's cooperative threads, as many as
    /// cores, so a test that blocked one for a whole `prepare --wait` (30 s and more) starved
    /// every other test of the process.
    func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while !process.hasEnded && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        guard process.hasEnded else { return nil }
        // What it wrote last is read by the stderr thread a moment later (2 s at most: a child
        // of its own may hold the pipe).
        let read = ContinuousClock.now + .seconds(2)
        while errDone.value.isEmpty && ContinuousClock.now < read { try? await Task.sleep(for: .milliseconds(5)) }
        return process.endStatus
    }

    deinit { stop(signal: SIGKILL) }
}

/// Text appended by one thread and read by others.
final class LockedText: @unchecked Sendable {
    // @unchecked: `text` is only touched under `lock`.
    private let lock = NSLock()
    private var text = ""
    func append(_ s: String) { lock.withLock { text += s } }
    var value: String { lock.withLock { text } }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

enum Live {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent("swarmgate").path
    static let python = ProcessInfo.processInfo.environment["SWARMGATE_PYTHON"] ?? "/usr/bin/python3"

    /// A token-checking origin serving `folder`; returns it and its port.
    static func origin(serving folder: URL, token: String) async throws -> (LiveProcess, Int) {
        let p = try LiveProcess(python, [packageRoot.appendingPathComponent("Tests/python/token_origin.py").path, folder.path, token])
        guard let port = Int(await p.firstStdoutLine()) else { throw TestFailure("origin did not start: \(p.stderr)") }
        return (p, port)
    }

    /// Tests/python/fault_origin.py (an origin that misbehaves on request); returns it and its port.
    static func faultOrigin() async throws -> (LiveProcess, Int) {
        let p = try LiveProcess(python, [packageRoot.appendingPathComponent("Tests/python/fault_origin.py").path])
        guard let port = Int(await p.firstStdoutLine()) else { throw TestFailure("fault origin did not start: \(p.stderr)") }
        return (p, port)
    }

    /// Tests/python/object_origin.py (versioned objects, resets, per-object records), a round
    /// trip of `rttMilliseconds` away (see OBJECT_ORIGIN_RTT_MS there).
    static func objectOrigin(rttMilliseconds: Int = 0) async throws -> (LiveProcess, Int) {
        let p = try LiveProcess(
            python, [packageRoot.appendingPathComponent("Tests/python/object_origin.py").path],
            environment: ["OBJECT_ORIGIN_RTT_MS": String(rttMilliseconds)])
        guard let port = Int(await p.firstStdoutLine()) else { throw TestFailure("object origin did not start: \(p.stderr)") }
        return (p, port)
    }

    /// The piece store's data files under a cache folder.
    static func dataFiles(in cache: String) throws -> [String] {
        let root = cache + "/objects"
        return try FileManager.default.subpathsOfDirectory(atPath: root).map { root + "/" + $0 }.filter {
            var isDir: ObjCBool = false
            return FileManager.default.fileExists(atPath: $0, isDirectory: &isDir) && !isDir.boolValue
        }
    }

    /// Disk blocks allocated to a cache's data files, in bytes (sparse files count what they hold).
    static func diskBytes(_ cache: String) throws -> Int64 {
        var total: Int64 = 0
        for file in try dataFiles(in: cache) {
            var st = stat()
            if stat(file, &st) == 0 { total += Int64(st.st_blocks) * 512 }
        }
        return total
    }

    /// The highest resident set size of a process so far (VmHWM).
    static func peakRSS(_ p: LiveProcess) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(p.process.processIdentifier)/status", encoding: .utf8)
        guard let kb = status.firstMatch(of: #/VmHWM:\s+(\d+) kB/#).flatMap({ Int($0.1) }) else { throw TestFailure("no VmHWM") }
        return kb << 10
    }

    /// Requests the origin saw, from the token origin's /__stats.
    static func originRequests(_ port: Int) async throws -> Int {
        let r = try await HTTP.get("http://127.0.0.1:\(port)/__stats")
        return Int(r.text.firstMatch(of: #/"requests": (\d+)/#).map { String($0.1) } ?? "-1") ?? -1
    }

    /// K of `NAME/segK.ts` in `text` (an origin URL or a key of object_origin.py's stats).
    static func segmentNumber(in text: String, of name: String) -> Int? {
        guard let r = text.range(of: name + "/seg") else { return nil }
        return Int(text[r.upperBound...].prefix { $0.isNumber })
    }

    /// Waits until `p` (a node) has logged in to its tracker `count` times (30 s at most).
    static func waitForLogins(_ p: LiveProcess, _ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while p.stderr.components(separatedBy: "logged in to the tracker").count - 1 < count {
            guard ContinuousClock.now < deadline else { throw TestFailure("fewer than \(count) logins: \(p.stderr)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// A new, empty folder for a gateway's cache.
    static func cacheFolder() -> String {
        Scratch.path("sg-cache")
    }

    /// `swarmgate serve` on a free port with these extra arguments; returns it and its port.
    static func gateway(_ arguments: [String], cache: String = cacheFolder(), environment: [String: String] = [:]) async throws -> (LiveProcess, Int) {
        let p = try LiveProcess(binary, ["serve", "--listen", "127.0.0.1:0", "--cache-dir", cache] + arguments, environment: environment)
        let port = try await p.waitForStderr(#/listening on 127\.0\.0\.1:(\d+)/#)
        return (p, Int(port)!)
    }

    /// Whether this machine lets `onSmallDisk` mount its disk: user namespaces are allowed
    /// (Debian; Ubuntu 24.04's AppArmor restricts them) and util-linux is installed.
    static let canMountSmallDisks: Bool = {
        let r = try? ProgramRun.runBlocking("/usr/bin/unshare", onSmallDisk(size: "64k", folder: NSTemporaryDirectory(), ["true"]), stderr: .discard)
        return r?.status == 0 && r?.signalled == false
    }()

    /// The arguments of `/usr/bin/unshare` that run `command` with `folder` on a disk of its
    /// own of `size` bytes (tmpfs's `size=`, e.g. "4m"), of which a file named `other` takes
    /// `taken` KiB first: a small disk that fills, or one shared and already full. The tmpfs is
    /// mounted in a mount namespace of the command's own (for any user where user namespaces
    /// are allowed), so it needs no privilege and is gone when the command exits.
    static func onSmallDisk(size: String, taken: Int = 0, folder: String, _ command: [String]) -> [String] {
        let script = #"""
            mount -t tmpfs -o "size=$1" tmpfs "$2" || exit 99
            if [ "$3" -gt 0 ]; then head -c "$3"k /dev/zero > "$2/other"; fi
            shift 3 && exec "$@"
            """#
        return ["--map-root-user", "--mount", "sh", "-c", script, "sh", size, folder, String(taken)] + command
    }

    /// `gateway(_:)` with its cache folder on a small disk (`onSmallDisk`). Returns the gateway,
    /// its port and its cache folder.
    static func gatewayOnSmallDisk(size: String, taken: Int = 0, _ arguments: [String]) async throws -> (LiveProcess, Int, String) {
        let cache = cacheFolder()
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        let p = try LiveProcess(
            "/usr/bin/unshare",
            onSmallDisk(size: size, taken: taken, folder: cache, [binary, "serve", "--listen", "127.0.0.1:0", "--cache-dir", cache] + arguments))
        let port = try await p.waitForStderr(#/listening on 127\.0\.0\.1:(\d+)/#)
        return (p, Int(port)!, cache)
    }
}

extension Live {
    /// GETs `url` until it stops answering 302 (its checksums are ready), then returns that
    /// answer. Every 302 on the way must be SPEC's "checksum not ready".
    static func whenReady(_ url: String, headers: [String: String] = [:], timeout: Duration = .seconds(60)) async throws -> HTTPResult {
        let deadline = ContinuousClock.now + timeout
        while true {
            let r = try await HTTP.get(url, headers: headers)
            guard r.status == 302 else { return r }
            guard ContinuousClock.now < deadline else { throw TestFailure("\(url) not ready within \(timeout)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

/// xresids as the gateway derives them: lowercase hex MD5 of host + path.
enum XResIDs {
    static func derived(_ host: String, _ path: String) -> String {
        let r = try? ProgramRun.runBlocking("/usr/bin/md5sum", [], stdin: Data((host + path).utf8))
        return String((r?.out ?? "").prefix(32))
    }
}

/// One HTTP exchange, redirects not followed.
struct HTTPResult {
    var status: Int
    var headers: [String: String]
    var body: Data
    var text: String { String(decoding: body, as: UTF8.self) }
}

final class NoRedirects: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    // @unchecked: stateless.
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}

enum HTTP {
    /// Tests' requests stand for many players, not one browser: more than URLSession's six
    /// connections per host at once.
    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        return URLSession(configuration: configuration, delegate: NoRedirects(), delegateQueue: nil)
    }()

    /// `timeout`: seconds without a byte before the request fails.
    static func get(_ url: String, headers: [String: String] = [:], method: String = "GET", timeout: Double = 30) async throws -> HTTPResult {
        guard let u = URL(string: url) else { throw TestFailure("bad URL \(url)") }
        var r = URLRequest(url: u)
        r.httpMethod = method
        r.timeoutInterval = timeout
        for (k, v) in headers { r.setValue(v, forHTTPHeaderField: k) }
        return try await exchange(r)
    }

    /// A TCP socket connected to `port` on 127.0.0.1 (the caller closes it).
    /// A TCP connection to 127.0.0.1:`port`; `receiveBuffer`: its SO_RCVBUF (set before the
    /// connect, so the window the server sees stays that small).
    static func connectLoopback(port: Int, receiveBuffer: Int32? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket") }
        if var size = receiveBuffer {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw TestFailure("connect to \(port)")
        }
        return fd
    }

    /// One GET over HTTP/1.0 on a plain socket, for what URLSession hides (the body of a 302).
    static func raw(port: Int, target: String) throws -> HTTPResult {
        let fd = try connectLoopback(port: port)
        defer { close(fd) }
        let request = Array("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            all += buffer[..<n]
            // Done once the head and Content-Length bytes of body are in.
            let text = String(decoding: all, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n"),
                let length = text[..<end.lowerBound].firstMatch(of: #/(?i)content-length:\s*(\d+)/#).flatMap({ Int($0.1) }),
                text.utf8.count - text[..<end.upperBound].utf8.count >= length
            {
                break
            }
        }
        let text = String(decoding: all, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw TestFailure("no header end in \(text)") }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        let status = Int(lines[0].split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            if let colon = line.firstIndex(of: ":") {
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return HTTPResult(status: status, headers: headers, body: Data(text[split.upperBound...].utf8))
    }

    static func post(_ url: String, json: String) async throws -> HTTPResult {
        guard let u = URL(string: url) else { throw TestFailure("bad URL \(url)") }
        var r = URLRequest(url: u)
        r.httpMethod = "POST"
        r.timeoutInterval = 30
        if !json.isEmpty {
            r.httpBody = Data(json.utf8)
            r.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return try await exchange(r)
    }

    static func exchange(_ r: URLRequest) async throws -> HTTPResult {
        let (data, response) = try await session.data(for: r)
        let http = response as! HTTPURLResponse
        var h: [String: String] = [:]
        for (k, v) in http.allHeaderFields { h["\(k)".lowercased()] = "\(v)" }
        return HTTPResult(status: http.statusCode, headers: h, body: data)
    }
}
