import Foundation
import Origin

/// Tests/python/fault_origin.py running on 127.0.0.1 for one test: a real HTTP origin that
/// misbehaves on request and counts what it was asked. Call `stop()` at the end.
final class FaultOrigin {
    let port: Int
    private let process: Process
    /// The script's stdin: it exits when this closes, even if the test process dies.
    private let lifeline = Pipe()
    /// Asks the origin for its counters; allowed to reach it because it is on the allow list.
    private let control: OriginClient

    /// The counters the origin keeps per key (see the script's docstring).
    struct Counts: Decodable, Equatable {
        var requests: Int
        var inflight: Int
        var max_inflight: Int
        var sent: Int
    }

    init() throws {
        let python = ProcessInfo.processInfo.environment["SWARMGATE_PYTHON"] ?? "python3"
        let script = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("python/fault_origin.py")
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [python, script.path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = lifeline
        try process.run()
        var line = Data()
        while true {
            let byte = out.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line += byte
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "fault_origin.py printed no port"])
        }
        self.port = port
        var config = OriginClient.Configuration()
        config.addressPolicy = AddressPolicy(allowOrigins: [AllowedOrigin("127.0.0.1:\(port)")!])
        control = OriginClient(configuration: config)
    }

    /// `http://127.0.0.1:PORT` + path.
    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// The counters for `key`.
    func counts(_ key: String) async throws -> Counts {
        let response = try await control.fetch(OriginRequest(url: url("/count/\(key)")))
        let body = try await response.body.collect(upTo: 1 << 16)
        return try JSONDecoder().decode(Counts.self, from: Data(body))
    }

    func stop() async {
        await control.shutdown()
        try? lifeline.fileHandleForWriting.close()
        process.terminate()
        process.waitUntilExit()
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}

/// A client for one test; `configure` adjusts the defaults.
func makeClient(_ configure: (inout OriginClient.Configuration) -> Void = { _ in }) -> OriginClient {
    var config = OriginClient.Configuration()
    config.retryBaseDelay = .milliseconds(10)
    configure(&config)
    return OriginClient(configuration: config)
}

/// A client that may fetch only from `origin` (and any other allow-list entries given).
func makeClient(allowing origin: FaultOrigin, _ configure: (inout OriginClient.Configuration) -> Void = { _ in }) -> OriginClient {
    makeClient { config in
        config.addressPolicy = AddressPolicy(allowOrigins: [AllowedOrigin("127.0.0.1:\(origin.port)")!])
        configure(&config)
    }
}

/// The error an operation failed with, or nil if it succeeded.
func failure<T>(_ operation: () async throws(OriginError) -> T) async -> OriginError? {
    do {
        _ = try await operation()
        return nil
    } catch {
        return error
    }
}

/// Whether `chunk` is the origin's deterministic content (`/bytes/N`: byte i is i % 251) at
/// `offset`.
func isExpectedContent(_ chunk: [UInt8], at offset: Int) -> Bool {
    var start = 0
    while start < chunk.count {
        let phase = (offset + start) % 251
        let n = min(chunk.count - start, contentPattern.count - phase)
        let same = chunk.withUnsafeBytes { c in
            contentPattern.withUnsafeBytes { p in memcmp(c.baseAddress! + start, p.baseAddress! + phase, n) == 0 }
        }
        if !same { return false }
        start += n
    }
    return true
}

private let contentPattern: [UInt8] = (0..<(251 * 300)).map { UInt8($0 % 251) }
