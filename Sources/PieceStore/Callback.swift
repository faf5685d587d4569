/// A function kept where it is set once and called from any thread, as `Mutex<Callback<A>?>`.
///
/// Not the function itself as the lock's value: a function value stored as a generic
/// container's value is re-abstracted each time `withLock` hands it out and takes it back,
/// and the thunks pile up, one pair per call. After some 37,000 preparations a gateway's
/// observer of finished jobs was that deep, and calling it overflowed the stack (a program
/// with the same pattern dies the same way built with `-O`). A class reference is handed
/// out as it is.
public final class Callback<Argument>: Sendable {
    public let call: @Sendable (Argument) -> Void

    public init(_ call: @escaping @Sendable (Argument) -> Void) {
        self.call = call
    }
}
