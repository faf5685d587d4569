import Foundation
@testable import Manifest
import TestScratch
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Hostile XML: each refused with a named error, without reading a file or opening a
/// connection. Speed belongs to the benchmarks; here a generous bound only guards against a
/// hang (the quadratic shapes these inputs target take many minutes when not refused).
@Suite struct HostileXMLTests {
    static let rewriter = DASHRewriter(mpdURL: try! OriginURL("http://o.example.com/m.mpd"))

    /// The error `input` is refused with, guarding against a hang.
    static func refusal(_ input: [UInt8], maxInputSize: Int = 16 << 20) -> ManifestError? {
        var o = DASHRewriter.Options()
        o.maxInputSize = maxInputSize
        let start = ContinuousClock.now
        defer { #expect(ContinuousClock.now - start < .seconds(60)) }
        do {
            _ = try DASHRewriter(mpdURL: try! OriginURL("http://o.example.com/m.mpd"), options: o).rewrite(input)
            return nil
        } catch {
            return error
        }
    }

    static let billionLaughs: String = {
        var s = "<?xml version=\"1.0\"?>\n<!DOCTYPE MPD [\n<!ENTITY lol \"lol\">\n"
        for i in 1...9 {
            let previous = i == 1 ? "lol" : "lol\(i - 1)"
            s += "<!ENTITY lol\(i) \"" + String(repeating: "&\(previous);", count: 10) + "\">\n"
        }
        return s + "]>\n<MPD><ProgramInformation><Title>&lol9;</Title></ProgramInformation></MPD>"
    }()

    @Test func billionLaughsIsRefused() {
        let e = Self.refusal(Array(Self.billionLaughs.utf8))
        #expect(e?.code == .forbiddenDeclaration)
        #expect(e?.line == 2)
    }

    @Test(arguments: [
        "<!DOCTYPE MPD [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><MPD><Title>&e;</Title></MPD>",
        "<!DOCTYPE MPD SYSTEM \"http://127.0.0.1:9/mpd.dtd\"><MPD/>",
        "<!doctype MPD><MPD/>",
        "<?xml version=\"1.0\"?><!-- <!DOCTYPE in a comment is fine --><!DOCTYPE MPD><MPD/>",
        "<MPD><!ENTITY x \"y\"></MPD>",
    ])
    func declarationsAreRefused(_ input: String) {
        #expect(Self.refusal(Array(input.utf8))?.code == .forbiddenDeclaration)
    }

    @Test func declarationLookalikesInCommentsAndCDATAAreNotDeclarations() throws {
        let input = "<MPD><!-- <!DOCTYPE x> --><ProgramInformation><Title><![CDATA[<!ENTITY y>]]></Title></ProgramInformation></MPD>"
        #expect(Self.refusal(Array(input.utf8)) == nil)
    }

    @Test func deepNestingIsALimit() {
        let input = Array((String(repeating: "<MPD>", count: 10_000) + String(repeating: "</MPD>", count: 10_000)).utf8)
        #expect(Self.refusal(input)?.code == .xmlLimit)
    }

    @Test func twentyMebibyteTextNode() {
        let text = [UInt8](repeating: UInt8(ascii: "a"), count: 20 << 20)
        let input = Array("<MPD><ProgramInformation><Title>".utf8) + text + Array("</Title></ProgramInformation></MPD>".utf8)
        // Over the 16 MiB input limit first...
        #expect(Self.refusal(input)?.code == .inputTooLarge)
        // ...and past libxml2's own 10,000,000-byte text limit when the input limit is raised.
        #expect(Self.refusal(input, maxInputSize: 32 << 20)?.code == .xmlLimit)
    }

    @Test func hugeAttributeIsALimit() {
        let input = Array("<MPD><BaseURL a=\"".utf8) + [UInt8](repeating: 0x61, count: 11_000_000) + Array("\"/></MPD>".utf8)
        #expect(Self.refusal(input, maxInputSize: 32 << 20)?.code == .xmlLimit)
    }

    /// Inputs that would make libxml2 2.9 itself quadratic are refused before it sees them.
    @Test(arguments: [
        "<MPD " + (0..<200_000).map { "a\($0)=\"\"" }.joined(separator: " ") + "/>",
        String(repeating: "<x xmlns:a=\"u\" xmlns:b=\"v\">", count: 100) + "<MPD/>" + String(repeating: "</x>", count: 100),
    ])
    func quadraticShapesAreALimit(_ input: String) {
        #expect(Self.refusal(Array(input.utf8))?.code == .xmlLimit)
    }

    // MARK: Amplification through inherited segment elements

    /// An AdaptationSet's SegmentList under many Representations: one copy per Representation
    /// would be huge. Same-scheme bases keep it shared, without comparing every pair.
    @Test func manyRepresentationsShareOneLongList() throws {
        let urls = String(repeating: #"<SegmentURL media="s.m4s"/>"#, count: 3_000)
        var reps = ""
        for i in 0..<3_000 { reps += #"<Representation id="r\#(i)" bandwidth="1"><BaseURL>http://h\#(i).example.com/</BaseURL></Representation>"# }
        let input = Array(mpd("<Period><AdaptationSet><SegmentList>\(urls)</SegmentList>\(reps)</AdaptationSet></Period>").utf8)
        #expect(Self.refusal(input) == nil)
        let output = try Self.rewriter.rewrite(input).output
        #expect(output.count < input.count * 2)
    }

    /// Mixed schemes force a copy per Representation; what copies may add is bounded.
    @Test func copiesPerRepresentationAreBounded() {
        let urls = String(repeating: #"<SegmentURL media="segment.m4s"/>"#, count: 12_000)
        var reps = ""
        for i in 0..<200 { reps += #"<Representation id="r\#(i)" bandwidth="1"><BaseURL>\#(i % 2 == 0 ? "http" : "https")://h.example.com/</BaseURL></Representation>"# }
        let input = Array(mpd("<Period><AdaptationSet><SegmentList>\(urls)</SegmentList>\(reps)</AdaptationSet></Period>").utf8)
        #expect(Self.refusal(input)?.code == .xmlLimit)
    }

    // MARK: The second line of defence, with the byte scan turned off

    /// With the DOCTYPE scan skipped, libxml2's options alone must keep an external entity
    /// unread and a network DTD unfetched, and the parsed DTD must still refuse the document.
    @Test func withoutTheScanNothingIsReadOrFetched() throws {
        let folder = try DASHTestEnvironment.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let secret = folder.appendingPathComponent("secret.txt")
        try Data("TOP-SECRET-MARKER".utf8).write(to: secret)
        let watch = try FileAccessWatch(secret.path)
        let listener = try LoopbackListener()

        let inputs = [
            "<!DOCTYPE MPD [<!ENTITY e SYSTEM \"file://\(secret.path)\">]><MPD><Title>&e;</Title></MPD>",
            "<!DOCTYPE MPD SYSTEM \"http://127.0.0.1:\(listener.port)/mpd.dtd\"><MPD><Title>&ext;</Title></MPD>",
            "<!DOCTYPE MPD SYSTEM \"http://127.0.0.1:\(listener.port)/mpd.dtd\"><MPD/>",
            "<!DOCTYPE MPD [<!ENTITY % p SYSTEM \"http://127.0.0.1:\(listener.port)/p.dtd\"> %p;]><MPD/>",
            Self.billionLaughs,
        ]
        for input in inputs {
            let start = ContinuousClock.now
            #expect(throws: ManifestError.self) { try XMLGate.check(Array(input.utf8), preScan: false) }
            #expect(ContinuousClock.now - start < .seconds(30), "no wait on a network fetch")
        }
        #expect(Self.codeWithoutScan("<!DOCTYPE MPD [<!ENTITY e \"x\">]><MPD/>") == .forbiddenDeclaration)
        #expect(Self.codeWithoutScan("<!DOCTYPE MPD><MPD/>") == .forbiddenDeclaration)
        #expect(watch.accessed() == false)
        #expect(listener.connectionAttempted() == false)
    }

    static func codeWithoutScan(_ input: String) -> ManifestError.Code? {
        do {
            try XMLGate.check(Array(input.utf8), preScan: false)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func randomMutationsNeverCrash() {
        let seed = Array(mpd("""
            <BaseURL>http://c.example.com/a/</BaseURL><Period><AdaptationSet><SegmentTemplate media="$Number$.m4s" initialization="i.mp4">
            <SegmentTimeline><S t="0" d="1" r="2"/></SegmentTimeline></SegmentTemplate>
            <Representation id="a" bandwidth="1"><BaseURL>b/</BaseURL></Representation>
            <Representation id="b" bandwidth="1"><BaseURL>https://d.example.com/</BaseURL><SegmentList><SegmentURL media="x"/></SegmentList></Representation>
            </AdaptationSet></Period>
            """).utf8)
        var rng = SplitMix64(seed: 3)
        let alphabet = Array("<>/=\"'&;:?#$%!-[]abMPD ".utf8)
        for _ in 0..<3000 {
            var b = seed
            for _ in 0..<Int.random(in: 1...8, using: &rng) {
                let i = Int.random(in: 0..<b.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: b[i] = alphabet.randomElement(using: &rng)!
                case 1: b.remove(at: i)
                default: b.insert(alphabet.randomElement(using: &rng)!, at: i)
                }
            }
            _ = try? Self.rewriter.rewrite(b)
        }
    }
}
