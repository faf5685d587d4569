import Foundation
import Origin
import Synchronization
import Testing
import TestScratch

/// Tests/python/fault_origin.py running on 127.0.0.1 for one test: a real HTTP origin that
/// misbehaves on request and counts what it was asked. Start with `await FaultOrigin.start()`,
/// end with `await stop()`. Nothing here blocks a thread of the concurrency pool (tests run in
/// parallel on few cores): the port arrives through a readability handler, the exit is polled.
final class FaultOrigin {
    let port: Int
    private let process: Process
    /// The script's stdin: it exits when this closes, even if the test process dies.
    private let lifeline: Pipe
    /// Asks the origin for its counters; allowed to reach it because it is on the allow list.
    private let control: OriginClient

    /// The counters the origin keeps per key (see the script's docstring).
    struct Counts: Decodable, Equatable {
        var requests: Int
        var inflight: Int
        var max_inflight: Int
        var sent: Int
    }

    static func start() async throws -> FaultOrigin {
        let python = ProcessInfo.processInfo.environment["SWARMGATE_PYTHON"] ?? "python3"
        let script = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("python/fault_origin.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [python, script.path]
        let out = Pipe(), lifeline = Pipe(), firstLine = LineReader()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = lifeline
        out.fileHandleForReading.readabilityHandler = { handle in firstLine.append(handle.availableData) }
        try process.run()
        let line = await firstLine.line()
        out.fileHandleForReading.readabilityHandler = nil
        guard let port = Int(line) else {
            process.terminate()
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "fault_origin.py printed no port"])
        }
        return FaultOrigin(process: process, port: port, lifeline: lifeline)
    }

    private init(process: Process, port: Int, lifeline: Pipe) {
        self.process = process
        self.port = port
        self.lifeline = lifeline
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

    /// Stops the origin and waits for its end as the kernel tells it (`hasEnded`): Foundation's
    /// termination handler may never run when a sibling inherited the child's socket
    /// (Tests/TestScratch/ProcessEnd.swift). Killed if SIGTERM has not ended it in 10 s.
    func stop() async {
        await control.shutdown()
        try? lifeline.fileHandleForWriting.close()
        process.terminate()
        guard await !ended(within: .seconds(10)) else { return }
        kill(process.processIdentifier, SIGKILL)
        _ = await ended(within: .seconds(10))
    }

    private func ended(within grace: Duration) async -> Bool {
        let deadline = ContinuousClock.now + grace
        while !process.hasEnded && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        return process.hasEnded
    }

    /// Collects output until the first newline (or the end) and hands over that line.
    private final class LineReader: Sendable {
        private let state = Mutex<(data: Data, line: String?, waiter: CheckedContinuation<String, Never>?)>((Data(), nil, nil))

        func append(_ chunk: Data) {
            let (waiter, line) = state.withLock { s -> (CheckedContinuation<String, Never>?, String) in
                guard s.line == nil else { return (nil, "") }
                s.data += chunk
                guard chunk.isEmpty || s.data.contains(UInt8(ascii: "\n")) else { return (nil, "") }
                let line = String(decoding: s.data.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
                s.line = line
                defer { s.waiter = nil }
                return (s.waiter, line)
            }
            waiter?.resume(returning: line)
        }

        func line() async -> String {
            await withCheckedContinuation { c in
                let line = state.withLock { s in
                    if s.line == nil { s.waiter = c }
                    return s.line
                }
                if let line { c.resume(returning: line) }
            }
        }
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

/// Runs `body` with a fresh fault origin and a client allowed to fetch from it (`configure`
/// adjusts the client), then shuts both down, also when `body` throws.
func withOrigin(
    _ configure: (inout OriginClient.Configuration) -> Void = { _ in },
    _ body: (FaultOrigin, OriginClient) async throws -> Void
) async throws {
    let origin = try await FaultOrigin.start()
    let client = makeClient(allowing: origin, configure)
    do {
        try await body(origin, client)
    } catch {
        await client.shutdown()
        await origin.stop()
        throw error
    }
    await client.shutdown()
    await origin.stop()
}

/// The error an operation failed with, or nil if it succeeded. An error that is not an
/// `OriginError` is recorded as an issue.
func failure<T>(_ operation: () async throws -> T) async -> OriginError? {
    do {
        _ = try await operation()
        return nil
    } catch let error as OriginError {
        return error
    } catch {
        Issue.record("not an OriginError: \(error)")
        return nil
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
