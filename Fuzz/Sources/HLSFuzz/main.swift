import Manifest

/// libFuzzer entry: every input must give a rewrite or a ManifestError, never a crash. The
/// rewrite runs with variables imported and both key modes so that every path is reachable.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHLS(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let base = try! OriginURL("https://cdn.example.com/v/i.m3u8?token=t&v=1")
    for mode in KeyURIMode.allCases {
        var options = HLSRewriter.Options()
        options.gateway = "http://gw"
        options.keyURIs = mode
        options.inheritQuery = mode == .proxy ? .all : .names(["token"])
        options.importedVariables = ["p": "https://edge.example/x", "q": "{$p}"]
        options.collectReferences = true
        options.maxExpandedURILength = 64 << 10
        do {
            let result = try HLSRewriter(playlistURL: base, options: options).rewrite(bytes)
            // Every reference the rewrite reports must be a URL the gateway can decode again.
            for ref in result.references {
                _ = ref.origin.string
            }
        } catch {
            // A named error is the expected answer to bad input.
        }
    }
    return 0
}
