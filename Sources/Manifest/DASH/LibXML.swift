internal import CLibXML2

/// libxml2 set up once for the whole process, before any thread parses: `xmlInitParser` and
/// silenced default error printing (errors are read from each parse instead).
enum LibXML {
    private static let initialized: Bool = {
        xmlInitParser()
        swarmgate_xml_silence_errors()
        return true
    }()

    /// Call before any use of libxml2; cheap after the first time.
    static func ensureInitialized() {
        _ = initialized
    }

    /// The running libxml2's version number, e.g. 20914 for 2.9.14.
    static var version: Int {
        ensureInitialized()
        return Int(swarmgate_xml_runtime_version())
    }
}
