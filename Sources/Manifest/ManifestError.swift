/// Why a playlist, an MPD or a URL could not be rewritten: a code that callers can match on,
/// the 1-based line it concerns (when there is one) and a sentence for people.
public struct ManifestError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure. New codes can be added without breaking callers that switch on
    /// the ones they know.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case notAPlaylist, byteOrderMark, controlByte, invalidUTF8, lineTooLong, inputTooLarge
            case undefinedVariable, recursiveVariable, duplicateVariable, invalidVariable
            case expansionTooLong, emptyURI, malformedAttributes, invalidByteRange
            case invalidBaseURL, invalidURI, reservedParameter
            case invalidXResID, invalidProxyURL, unknownVirtualHost
            case notAnMPD, forbiddenDeclaration, xmlSyntax, xmlLimit
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The text does not start with `#EXTM3U`.
        public static let notAPlaylist = Code(.notAPlaylist)
        /// The text starts with a UTF-8 byte order mark, which RFC 8216 forbids.
        public static let byteOrderMark = Code(.byteOrderMark)
        /// A NUL or other control byte (other than tab and line endings).
        public static let controlByte = Code(.controlByte)
        /// Bytes that are not valid UTF-8.
        public static let invalidUTF8 = Code(.invalidUTF8)
        /// A line longer than the limit (1 MiB).
        public static let lineTooLong = Code(.lineTooLong)
        /// The whole input is larger than the limit.
        public static let inputTooLarge = Code(.inputTooLarge)
        /// A `{$name}` reference to a variable that no `EXT-X-DEFINE` defined.
        public static let undefinedVariable = Code(.undefinedVariable)
        /// An `EXT-X-DEFINE` whose value refers to the variable itself.
        public static let recursiveVariable = Code(.recursiveVariable)
        /// The same variable defined twice.
        public static let duplicateVariable = Code(.duplicateVariable)
        /// An `EXT-X-DEFINE` without a usable NAME, IMPORT or QUERYPARAM.
        public static let invalidVariable = Code(.invalidVariable)
        /// Substituting variables made a URI longer than the limit.
        public static let expansionTooLong = Code(.expansionTooLong)
        /// `URI=""` or an equivalent empty reference.
        public static let emptyURI = Code(.emptyURI)
        /// An attribute list that cannot be read (unterminated or missing quotes on a URI).
        public static let malformedAttributes = Code(.malformedAttributes)
        /// A byte range that is not `length[@offset]` or does not fit in 64 bits.
        public static let invalidByteRange = Code(.invalidByteRange)
        /// The URL the manifest is resolved against is not an absolute http(s) URL.
        public static let invalidBaseURL = Code(.invalidBaseURL)
        /// A URI that cannot be made into an origin URL (e.g. it carries user info).
        public static let invalidURI = Code(.invalidURI)
        /// An origin URL whose query already uses one of the gateway's own parameter names.
        public static let reservedParameter = Code(.reservedParameter)
        /// An `xresid` outside `[A-Za-z0-9._-]{1,128}`.
        public static let invalidXResID = Code(.invalidXResID)
        /// A request path that is not a proxy URL (bad xmode, no origin host...).
        public static let invalidProxyURL = Code(.invalidProxyURL)
        /// A request path whose first segment is neither `hls.vod.p2p.com` nor `xdfs.p2p.com`.
        public static let unknownVirtualHost = Code(.unknownVirtualHost)
        /// An XML document whose root is not `MPD`.
        public static let notAnMPD = Code(.notAnMPD)
        /// A DOCTYPE or ENTITY declaration, refused to keep XXE and entity expansion out.
        public static let forbiddenDeclaration = Code(.forbiddenDeclaration)
        /// XML that libxml2 cannot parse.
        public static let xmlSyntax = Code(.xmlSyntax)
        /// XML past a safety limit (nesting depth, text size).
        public static let xmlLimit = Code(.xmlLimit)

        public var description: String { base.rawValue }
    }

    public let code: Code
    /// 1-based line number in the input, when the failure concerns one line.
    public let line: Int?
    public let message: String

    public init(_ code: Code, line: Int? = nil, _ message: String) {
        self.code = code
        self.line = line
        self.message = message
    }

    /// An `IMPORT` of a variable the parent playlist did not hand down (`undefinedVariable`).
    static func missingImport(_ name: String, line: Int) -> ManifestError {
        ManifestError(.undefinedVariable, line: line, missingImportPrefix + "'\(name)', which the parent playlist does not define")
    }

    private static let missingImportPrefix = "IMPORT of "

    /// Whether this is `missingImport`: the media playlist was asked for without its master's
    /// variables, rather than one that uses a variable it never defines.
    public var isMissingImport: Bool { code == .undefinedVariable && message.hasPrefix(Self.missingImportPrefix) }

    public var description: String {
        if let line { return "line \(line): \(message) [\(code)]" }
        return "\(message) [\(code)]"
    }
}
