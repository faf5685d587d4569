import Synchronization

/// `feature?upload=0|1`: whether this node serves pieces to peers. Off takes effect at once.
public final class UploadSwitch: Sendable {
    private let on = Atomic<Bool>(true)
    public init() {}
    public var isOn: Bool { on.load(ordering: .acquiring) }
    public func set(_ value: Bool) { on.store(value, ordering: .releasing) }
}
