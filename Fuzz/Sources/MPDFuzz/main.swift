import Manifest

/// libFuzzer entry for the DASH MPD rewriter: any input must either rewrite or be refused with
/// a ManifestError, never crash, hang or leak. Built with `-parse-as-library` so that this
/// file defines no `main` of its own (libFuzzer provides it).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? MPDFuzzTarget.rewriter.rewrite(input)
    return 0
}

/// The rewriter the fuzzer drives: an https MPD URL with a query, so that xhttps, query
/// handling and relative resolution are all exercised.
enum MPDFuzzTarget {
    static let rewriter: DASHRewriter = {
        var options = DASHRewriter.Options()
        options.gateway = "http://gw.example.net:8080"
        options.collectReferences = true
        return DASHRewriter(mpdURL: try! OriginURL("https://cdn.example.com/vod/a/manifest.mpd?token=x%2Fy"), options: options)
    }()
}
