import Foundation
import Origin
import Testing
import TestScratch

/// TLS verification and HTTP/2 against a real nginx (Debian's) with a certificate made here by
/// openssl for 127.0.0.1; nginx's access log says which protocol each request used.
@Suite("TLS and HTTP/2 against nginx", .serialized, .enabled(if: TLSOrigin.available))
final class TLSTests {
    let origin: TLSOrigin

    init() async throws { origin = try await TLSOrigin() }
    deinit { origin.stop() }

    func client(caFile: String?, version: OriginClient.Configuration.HTTPVersion = .http2OverTLS) -> OriginClient {
        makeClient { c in
            c.caFile = caFile
            c.httpVersion = version
            c.retries = 0
            c.addressPolicy = AddressPolicy(allowOrigins: [AllowedOrigin("127.0.0.1:\(self.origin.port)")!])
        }
    }

    @Test func aVerifiedOriginIsFetchedOverHTTP2() async throws {
        let c = client(caFile: origin.certificate)
        let r = try await c.fetch(OriginRequest(url: "https://127.0.0.1:\(origin.port)/object.bin"))
        #expect(r.status == 200)
        #expect(try await r.body.collect(upTo: 1 << 20) == origin.object)
        await c.shutdown()
        #expect(try origin.protocols().last == "HTTP/2.0")
    }

    @Test func http1OnlyStaysOnHTTP1() async throws {
        let c = client(caFile: origin.certificate, version: .http1_1)
        let r = try await c.fetch(OriginRequest(url: "https://127.0.0.1:\(origin.port)/object.bin", range: .closed(first: 10, last: 19)))
        #expect(r.status == 206)
        #expect(try await r.body.collect(upTo: 100) == Array(origin.object[10...19]))
        await c.shutdown()
        #expect(try origin.protocols().last == "HTTP/1.1")
    }

    @Test func anUnverifiableCertificateIsRefusedBeforeAnyRequest() async throws {
        let before = try origin.protocols().count
        let c = client(caFile: origin.otherCertificate)
        let error = await failure { try await c.fetch(OriginRequest(url: "https://127.0.0.1:\(self.origin.port)/object.bin")) }
        #expect(error != nil)
        #expect(error?.description.lowercased().contains("certificate") == true, "\(String(describing: error))")
        await c.shutdown()
        #expect(try origin.protocols().count == before, "no request reached nginx")
    }
}

/// nginx on 127.0.0.1 serving one object over TLS with HTTP/2, and its certificate.
final class TLSOrigin: @unchecked Sendable {
    // @unchecked: every property is set in init and only read afterwards.
    static let nginx = "/usr/sbin/nginx"
    static let openssl = "/usr/bin/openssl"
    static var available: Bool {
        FileManager.default.isExecutableFile(atPath: nginx) && FileManager.default.isExecutableFile(atPath: openssl)
    }

    let folder = Scratch.path("tls")
    let port: Int
    let object = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
    var certificate: String { folder + "/cert.pem" }
    /// A certificate of another authority: what an impostor would present.
    var otherCertificate: String { folder + "/other.pem" }
    private let process = Process()

    init() async throws {
        try FileManager.default.createDirectory(atPath: folder + "/www", withIntermediateDirectories: true)
        try Data(object).write(to: URL(fileURLWithPath: folder + "/www/object.bin"))
        for (name, key) in [("cert", "key"), ("other", "otherkey")] {
            try await Self.run(Self.openssl, [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", "\(folder)/\(key).pem", "-out", "\(folder)/\(name).pem",
            ])
        }
        port = try Self.freePort()
        let conf = """
            daemon off; worker_processes 1; pid \(folder)/nginx.pid; error_log \(folder)/error.log;
            events { worker_connections 64; }
            http { log_format p '$server_protocol'; access_log \(folder)/access.log p;
              client_body_temp_path \(folder); proxy_temp_path \(folder); fastcgi_temp_path \(folder);
              uwsgi_temp_path \(folder); scgi_temp_path \(folder);
              server { listen 127.0.0.1:\(port) ssl http2; root \(folder)/www;
                ssl_certificate \(folder)/cert.pem; ssl_certificate_key \(folder)/key.pem; } }
            """
        try Data(conf.utf8).write(to: URL(fileURLWithPath: folder + "/nginx.conf"))
        process.executableURL = URL(fileURLWithPath: Self.nginx)
        process.arguments = ["-c", folder + "/nginx.conf", "-p", folder]
        // Not the test process's own output: nginx would hold it open, and the test runner
        // would wait on it for good should this process crash.
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + .seconds(10)
        while !FileManager.default.fileExists(atPath: folder + "/nginx.pid") {
            guard ContinuousClock.now < deadline, !process.hasEnded else { throw OriginTestFailure("nginx did not start") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// The protocol of each request nginx logged, in order.
    func protocols() throws -> [String] {
        Thread.sleep(forTimeInterval: 0.1)  // nginx writes the line as the response ends
        let text = (try? String(contentsOfFile: folder + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    func stop() {
        if !process.hasEnded { process.terminate() }
        process.waitForEnd()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A loopback port nothing listens on now.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard ok else { throw OriginTestFailure("no free port") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    static func run(_ tool: String, _ arguments: [String]) async throws {
        let r = try await ProgramRun.run(tool, arguments, stdout: .discard)
        guard r.status == 0 && !r.signalled else { throw OriginTestFailure("\(tool) \(arguments) failed: \(r.err)") }
    }
}

struct OriginTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
