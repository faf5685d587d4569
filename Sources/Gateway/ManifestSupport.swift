import Manifest

extension GatewayResponder {
    /// DASH rewriting arrives with the DASH issue's merge.
    func rewriteDASH(_ body: [UInt8], url: OriginURL, xresid: XResID) throws -> [UInt8] {
        throw ManifestError(.notAnMPD, "DASH support is not built yet")
    }
}
