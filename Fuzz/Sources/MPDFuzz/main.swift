import Manifest

/// libFuzzer entry for the DASH MPD rewriter (with its segment listing): any input must either
/// rewrite or be refused with a ManifestError, never crash, hang or leak. And what it writes must be an MPD again: a
/// second rewrite of the output may only object to the xresid the first one added (the
/// output's queries now carry gateway parameters), never to its XML. Built with
/// `-parse-as-library`, so this file defines no `main` of its own (libFuzzer provides it).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = try? MPDFuzzTarget.rewriter.rewrite(input) else { return 0 }
    // The segment listing for read-ahead stays within its bound (an initialization per list
    // on top of the media segments).
    let listed = first.segments.reduce(0) { $0 + $1.segments.count }
    if listed > 200_000 + first.segments.count || (first.isDynamic && first.segments.contains { $0.segments.count > LiveTail.maxSegments + 1 }) {
        fatalError("\(listed) segments listed for \(first.segments.count) Representations")
    }
    do {
        _ = try MPDFuzzTarget.rewriter.rewrite(first.output)
    } catch {
        let broken: Set<ManifestError.Code> = [.xmlSyntax, .notAnMPD, .forbiddenDeclaration]
        if broken.contains(error.code) {
            fatalError("the rewritten MPD does not parse: \(error)\n\(String(decoding: first.output, as: UTF8.self))")
        }
    }
    return 0
}

/// The rewriter the fuzzer drives: an https MPD URL with a query, so that xhttps, query
/// handling and relative resolution are all exercised.
enum MPDFuzzTarget {
    static let rewriter: DASHRewriter = {
        var options = DASHRewriter.Options()
        options.gateway = "http://gw.example.net:8080"
        options.collectReferences = true
        options.collectSegments = true
        // A dynamic MPD lists its live tail against this clock (2027-01-15).
        options.now = 1_800_000_000
        return DASHRewriter(mpdURL: try! OriginURL("https://cdn.example.com/vod/a/manifest.mpd?token=x%2Fy"), options: options)
    }()
}
