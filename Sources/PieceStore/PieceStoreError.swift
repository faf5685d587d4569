/// Why the piece store could not do what was asked. The codes can grow without breaking
/// callers that switch over the ones they know.
public struct PieceStoreError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String { case index, io, full, layout, inUse }
        private let value: Value
        private init(_ v: Value) { value = v }
        /// The SQLite index could not be opened, read or written.
        public static let index = Code(.index)
        /// A data file could not be created, read or written.
        public static let io = Code(.io)
        /// No room: the cache bound cannot fit the piece even after eviction.
        public static let full = Code(.full)
        /// The object's layout disagrees with what the store holds.
        public static let layout = Code(.layout)
        /// Another process has the store's directory open.
        public static let inUse = Code(.inUse)
        public var description: String { value.rawValue }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
