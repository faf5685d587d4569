import Foundation

/// A master playlist's `EXT-X-DEFINE` variables as they travel to the media playlists it
/// references: in their URIs on the gateway, as the `xvars` parameter. A media playlist that
/// `IMPORT`s a variable then gets it from the master this player read (SPEC section 1), whoever
/// else reads a master of the same stream; the gateway keeps no variables between requests.
public enum PlaylistVariables {
    /// The longest `xvars` value: variables that encode longer do not travel (a media playlist
    /// that imports them is refused), so that a proxy URL stays well under 8 KiB.
    public static let maxEncodedSize = 4096

    /// The `xvars` value for `variables`: base64url (no padding) of their JSON object, names
    /// sorted. Nil when there are none, or when it would be longer than `maxEncodedSize`.
    public static func encode(_ variables: [String: String]) -> String? {
        guard !variables.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let json = try? encoder.encode(variables) else { return nil }
        let text = json.base64EncodedString().replacing("+", with: "-").replacing("/", with: "_").replacing("=", with: "")
        return text.utf8.count <= maxEncodedSize ? text : nil
    }

    /// `&xvars=VALUE`, as a proxy URL ends with it.
    static func queryItem(_ value: String) -> [UInt8] { Array("&xvars=\(value)".utf8) }

    /// The variables an `xvars` value carries.
    public static func decode(_ value: String) throws(ManifestError) -> [String: String] {
        var base64 = value.replacing("-", with: "+").replacing("_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard value.utf8.count <= maxEncodedSize, let data = Data(base64Encoded: base64),
            let variables = try? JSONDecoder().decode([String: String].self, from: data)
        else {
            throw ManifestError(.invalidProxyURL, "xvars does not carry playlist variables")
        }
        // What a playlist could define: a name of [A-Za-z0-9_-], a value a quoted string can
        // hold (no control byte, no quote): a forged value must not add lines to a playlist.
        for (name, value) in variables {
            guard !name.isEmpty, name.utf8.allSatisfy(HLSRewriteRun.isVariableNameByte),
                value.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x22 && $0 != 0x7f })
            else {
                throw ManifestError(.invalidProxyURL, "xvars carries a variable no playlist could define")
            }
        }
        return variables
    }
}
