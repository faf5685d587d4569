import Foundation
import Testing

import Gateway
import TestScratch

@Suite("Settings: flags, then SWARMGATE_* variables, then the config file")
struct SettingsTests {
    static let file = """
        # a comment
        listen = "0.0.0.0:9000"   # trailing comment
        allow_origin = ["cdn.example.com", "*.example.net"]
        key_uris = 'proxy'
        demo = true
        """

    func settings(flags: [String: String] = [:], env: [String: String] = [:], file: String = file) throws -> Settings {
        var f = flags
        f["config"] = "/etc/swarmgate.toml"
        return try Settings(SettingDefinitions.serve, flags: f, environment: env, readFile: { _ in file })
    }

    @Test func theFileFillsWhatNothingElseSets() throws {
        let s = try settings()
        #expect(s["listen"] == "0.0.0.0:9000")
        #expect(s.list("allow-origin") == ["cdn.example.com", "*.example.net"])
        #expect(s["key-uris"] == "proxy")
        #expect(try s.toggle("demo"))
        #expect(s["cache-size"] == "10GiB", "defaults fill the rest")
    }

    @Test func environmentBeatsFileAndFlagsBeatEnvironment() throws {
        let s = try settings(flags: ["listen": "127.0.0.1:1"], env: ["SWARMGATE_LISTEN": "127.0.0.1:2", "SWARMGATE_ALLOW_ORIGIN": "a.example, b.example"])
        #expect(s["listen"] == "127.0.0.1:1")
        #expect(s.list("allow-origin") == ["a.example", "b.example"])
        let t = try settings(env: ["SWARMGATE_LISTEN": "127.0.0.1:2"])
        #expect(t["listen"] == "127.0.0.1:2")
    }

    @Test(arguments: [
        ("[server]\nlisten = \"x\"", "tables are not supported"),
        ("listen = 0.0.0.0:9000", "strings need quotes"),
        ("lisen = \"x\"", "unknown setting 'lisen'"),
        ("listen = \"x\"\nlisten = \"y\"", "set twice"),
        ("listen = \"unterminated", "unterminated string"),
        ("demo = \"maybe\"", "demo must be true or false"),
        ("allow_origin = [1, 2]", "arrays hold strings"),
        ("allow_origin = [\n  \"a.example\"\n  \"b.example\"\n]", "/etc/swarmgate.toml:3: expected , or ]"),
        ("allow_origin = [\n  \"a.example\",\n", "/etc/swarmgate.toml:3: the array has no closing ]"),
    ])
    func badFilesAreNamedWithTheLine(text: String, message: String) {
        do {
            let s = try settings(file: text)
            _ = try s.toggle("demo")
            Issue.record("accepted: \(text)")
        } catch {
            #expect("\(error)".contains(message), "\(error)")
        }
    }

    @Test func configurationIsTyped() throws {
        let c = try GatewayConfiguration(try settings())
        #expect(c.host == "0.0.0.0")
        #expect(c.port == 9000)
        #expect(c.publicURL == "http://127.0.0.1:9000", "a wildcard listen address is no URL a player can use")
        #expect(c.keyURIs == .proxy)
        #expect(throws: SettingsError.self) {
            try GatewayConfiguration(try Settings(SettingDefinitions.serve, flags: ["listen": "nope"], environment: [:]))
        }
    }

    /// Every URL the gateway writes starts with its public URL (and every piece URL with its
    /// peer URL): one with a query, a fragment, user info or a port out of range is refused at
    /// start, not written into every playlist.
    @Test(arguments: ["http://gw/pre?x=1", "http://gw/#f", "http://gw:99999", "http://gw:0", "http://u@gw", "ftp://gw", "gw:8080"])
    func publicAndPeerURLsThatCannotStartAURLAreRefused(url: String) throws {
        for setting in ["public-url", "peer-url"] {
            #expect(throws: SettingsError.self, "\(setting) \(url)") {
                try GatewayConfiguration(try Settings(SettingDefinitions.serve, flags: [setting: url], environment: [:]))
            }
        }
        let kept = try GatewayConfiguration(try Settings(SettingDefinitions.serve, flags: ["public-url": "https://gw.example:8443/edge"], environment: [:]))
        #expect(kept.publicURL == "https://gw.example:8443/edge")
    }

    /// A file written on Windows (CRLF) reads as the same file; a decimal reads as a flag
    /// would give it (`live_hold = 0.5`); a missing or unreadable file is named in a few words.
    @Test func crlfLinesDecimalsAndUnreadableFilesAreRead() throws {
        let windows = try settings(file: Self.file.replacingOccurrences(of: "\n", with: "\r\n"))
        #expect(windows["listen"] == "0.0.0.0:9000" && windows.list("allow-origin") == ["cdn.example.com", "*.example.net"])
        let decimal = try settings(file: "live_hold = 0.5\norigin_idle_timeout = 2.25\n")
        #expect(decimal["live-hold"] == "0.5" && decimal["origin-idle-timeout"] == "2.25")
        #expect(try GatewayConfiguration(decimal).originIdleTimeout == .milliseconds(2250))
        #expect(throws: SettingsError.self) { try settings(file: "live_hold = 0.5.1\n") }
        for (path, why) in [("/nonexistent/swarmgate.toml", "no such file"), (NSTemporaryDirectory(), "it is a folder")] {
            do {
                _ = try Settings(SettingDefinitions.serve, flags: ["config": path], environment: [:])
                Issue.record("\(path) was read")
            } catch {
                #expect(error.message == "cannot read config file \(path): \(why)")
            }
        }
    }

    /// TOML arrays over several lines, with comments and a trailing comma, as an operator
    /// writes a long allow list (they were refused).
    @Test func arraysGoOnOverLines() throws {
        let file = """
            allow_origin = [  # the CDNs
              "cdn.example.com",
              # a comment between items
              "*.example.net", "edge.example.org" ,
            ]
            listen = "0.0.0.0:9000"
            """
        let s = try settings(file: file)
        #expect(s.list("allow-origin") == ["cdn.example.com", "*.example.net", "edge.example.org"] && s["listen"] == "0.0.0.0:9000")
        #expect(try settings(file: "allow_origin = [\n]\n").list("allow-origin") == [])
        // inherit_query is a list too, in either form (an array was refused as the wrong type).
        for form in ["inherit_query = [\"token\", \"expires\"]", "inherit_query = \"token, expires\""] {
            let flagged = try GatewayConfiguration(try settings(flags: ["inherit-query": "token,expires"], file: "")).inheritQuery
            #expect(try GatewayConfiguration(try settings(file: form)).inheritQuery == flagged, "\(form)")
            #expect(flagged != .none)
        }
    }

    @Test func swarmSettingsAreTyped() throws {
        let auto = try GatewayConfiguration(try settings())
        #expect(auto.peerDeadline == nil, "auto: from the segment's duration")
        #expect(auto.prefetchSegments == 3)
        #expect(auto.liveHold == nil, "auto: from the segments' duration")
        let set = try GatewayConfiguration(try settings(flags: ["peer-deadline": "0.25", "prefetch-segments": "0", "peer-url": "http://node1:8080", "live-hold": "0"]))
        #expect(set.peerDeadline == .milliseconds(250))
        #expect(set.liveHold == .zero)
        #expect(try GatewayConfiguration(try settings(flags: ["live-hold": "2.5"])).liveHold == .milliseconds(2500))
        #expect(set.prefetchSegments == 0)
        #expect(set.peerURL == "http://node1:8080")
        for bad in [["peer-deadline": "soon"], ["peer-deadline": "-1"], ["prefetch-segments": "99"], ["peer-url": "not a url"], ["live-hold": "11"], ["live-hold": "off"], ["live-hold": "-0.5"]] {
            #expect(throws: SettingsError.self) { try GatewayConfiguration(try settings(flags: bad)) }
        }
        #expect(auto.nodeMessageRate == 500)
        for bad in ["0", "many", "-5"] {
            #expect(throws: SettingsError.self) { try GatewayConfiguration(try settings(flags: ["node-message-rate": bad])) }
        }
        let tracker = try GatewayConfiguration(try Settings(SettingDefinitions.tracker, flags: ["db": "/var/lib/t.sqlite", "node-message-rate": "2000"], environment: [:]))
        #expect(tracker.nodeMessageRate == 2000)
        #expect(tracker.registryPath == "/var/lib/t.sqlite")
        #expect(tracker.cacheDirectory == "swarmgate-tracker-cache")
    }

    /// A huge or infinite idle timeout is a named error: it trapped converting to
    /// milliseconds (a crash loop under a supervisor). A largest object of 0 refused every
    /// media object.
    @Test func badValuesOfTheListenAddressTheIdleTimeoutTheLargestObjectAndTheFileAreNamed() throws {
        #expect(try GatewayConfiguration(try settings(flags: ["origin-idle-timeout": "86400"])).originIdleTimeout == .seconds(86_400))
        for bad in ["1e300", "inf", "nan", "0", "-1", "86401"] {
            #expect(throws: SettingsError.self, "\(bad)") { try GatewayConfiguration(try settings(flags: ["origin-idle-timeout": bad])) }
        }
        #expect(throws: SettingsError.self) { try GatewayConfiguration(try settings(flags: ["max-object-size": "0"])) }
        // A listen address names its host (`:8080` failed in the socket layer, exit 1).
        #expect(throws: SettingsError.self) { try GatewayConfiguration(try settings(flags: ["listen": ":8080"])) }
        // A config file that names another is refused, not read as if it did nothing.
        #expect(throws: SettingsError.self) { try settings(file: "config = \"other.toml\"\n") }
    }

    @Test func readAheadIsSecondsOrAll() throws {
        #expect(try GatewayConfiguration(try settings()).readAhead == .seconds(60))
        #expect(try GatewayConfiguration(try settings(flags: ["read-ahead": "all"])).readAhead == nil)
        #expect(try GatewayConfiguration(try settings(flags: ["read-ahead": "0"])).readAhead == .zero)
        let tracker = try GatewayConfiguration(try Settings(SettingDefinitions.tracker, flags: ["read-ahead": "45.5"], environment: [:]))
        #expect(tracker.readAhead == .milliseconds(45_500))
        for bad in ["-1", "soon", "100000"] {
            #expect(throws: SettingsError.self) { try GatewayConfiguration(try settings(flags: ["read-ahead": bad])) }
        }
    }

    /// SPEC section 4: flags, then the environment, then the file. A secret may come as a file
    /// setting or as a variable holding it; a file the config file names loses to the variable.
    @Test func aSecretInTheEnvironmentBeatsTheConfigFilesSecretFile() throws {
        let secretPath = Scratch.path("secret"), tokenPath = Scratch.path("token")
        try "from-the-file\n".write(toFile: secretPath, atomically: true, encoding: .utf8)
        try "token-from-the-file".write(toFile: tokenPath, atomically: true, encoding: .utf8)
        let file = "app_secret_file = \"\(secretPath)\"\nadmin_token_file = \"\(tokenPath)\""
        let env = ["SWARMGATE_APP_SECRET": "from-the-environment", "SWARMGATE_ADMIN_TOKEN": "token-from-the-environment"]

        let fileOnly = try settings(file: file)
        #expect(try SwarmCredentials.from(fileOnly, environment: [:], required: true)?.secret == "from-the-file")
        #expect(try AdminAccess.token(from: fileOnly, environment: [:]) == "token-from-the-file")

        let environmentToo = try settings(env: env, file: file)
        #expect(try SwarmCredentials.from(environmentToo, environment: env, required: true)?.secret == "from-the-environment")
        #expect(try AdminAccess.token(from: environmentToo, environment: env) == "token-from-the-environment")

        // A file a flag (or its own SWARMGATE_*_FILE variable) names beats the variable.
        let flagged = try settings(flags: ["app-secret-file": secretPath, "admin-token-file": tokenPath], env: env, file: "")
        #expect(try SwarmCredentials.from(flagged, environment: env, required: true)?.secret == "from-the-file")
        #expect(try AdminAccess.token(from: flagged, environment: env) == "token-from-the-file")
        var fileVariables = env
        fileVariables["SWARMGATE_APP_SECRET_FILE"] = secretPath
        let named = try settings(env: fileVariables, file: "")
        #expect(try SwarmCredentials.from(named, environment: fileVariables, required: true)?.secret == "from-the-file")
    }

    /// A secret file that holds nothing is named: it was taken as no secret, so an embedded
    /// tracker drew a random one that no node could log in with, and said nothing.
    @Test func anEmptySecretFileIsAnError() throws {
        let empty = Scratch.path("empty-secret")
        try " \n\n".write(toFile: empty, atomically: true, encoding: .utf8)
        let s = try settings(flags: ["app-secret-file": empty], file: "")
        for required in [true, false] {
            let error = #expect(throws: SettingsError.self) { try SwarmCredentials.from(s, environment: [:], required: required) }
            #expect(error?.message.contains("\(empty) is empty") == true, "\(error?.message ?? "")")
        }
        // No file and no variable: a random secret for an embedded tracker, none for a node.
        let none = try settings(file: "")
        #expect(try SwarmCredentials.from(none, environment: [:], required: true) == nil)
        #expect(try SwarmCredentials.from(none, environment: [:], required: false)?.secret.count ?? 0 >= 64)
    }

    @Test func everyDefinitionHasItsThreeNames() {
        let d = SettingDefinitions.serve.first { $0.name == "app-secret-file" }
        #expect(d?.flag == "--app-secret-file")
        #expect(d?.environmentVariable == "SWARMGATE_APP_SECRET_FILE")
        #expect(d?.fileKey == "app_secret_file")
    }
}
