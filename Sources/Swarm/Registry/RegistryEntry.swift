import Foundation
import PieceStore

/// What the checksum registry knows of one media object (SPEC section 3): its state and, once
/// ready, its length, piece size and the SHA-256 of every piece, computed from the CDN copy.
public struct RegistryEntry: Sendable {
    public enum State: String, Sendable {
        case unknown, preparing, ready, failed
    }

    public let key: ObjectKey
    public var state: State
    public var checksums: PieceChecksums?
    /// The origin's validators and content type for the prepared copy.
    public var etag: String?
    public var lastModified: String?
    public var contentType: String?
    /// The origin URL the registry prepared this copy from (nil for checksums it was given, or
    /// kept before it recorded one): where it checks a copy a node says changed, with the query
    /// it chose itself, never one a node names.
    public var sourceURL: String?
    /// Why preparation failed, for `failed`.
    public var error: String?
    public var updated: Date

    public init(key: ObjectKey, state: State = .unknown) {
        self.key = key
        self.state = state
        self.updated = Date()
    }
}
