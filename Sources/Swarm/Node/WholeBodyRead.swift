import Origin
import Synchronization

/// An origin's whole body, sent for one piece's range (an origin that ignores ranges), read
/// once for the object: the reader verifies and keeps each piece as it passes and hands it to
/// the fetches waiting for it, so that the object's other pieces do not each ask the origin
/// for the whole body again (piece k of n would cost k + 1 pieces of transfer).
final class WholeBodyRead: Sendable {
    /// What a fetch waiting for a piece gets.
    enum Outcome: Sendable {
        case piece([UInt8])
        /// Not from this read: it passed the piece before it was asked for (the store may
        /// hold it), stopped short of it, or broke off (`error`).
        case missed
        /// The origin's copy is not the one prepared (a piece failed its check, the body is
        /// shorter or longer): every piece not read yet fails so.
        case failed(SwarmNode.PieceFailure)
    }

    private struct State {
        /// Pieces read so far (the next one read is this index).
        var next = 0
        /// Fetches waiting, by piece; an empty list: the piece is wanted by a fetch that has
        /// not begun to wait yet (the one whose request got the body).
        var waiting: [Int: [CheckedContinuation<Outcome, Never>]] = [:]
        /// Wanted pieces read before their fetch waited.
        var kept: [Int: [UInt8]] = [:]
        var highestWanted: Int
        /// Whether the body is being read (not only asked for: a probe), to its end
        /// (`wholeObject`) or up to `ahead` pieces past the highest one wanted.
        var started = false
        var wholeObject = false
        var ahead = 0
        /// The reader, waiting for a fetch to want the piece it is at (`demand`), and which
        /// wait that is.
        var reader: (index: Int, wait: Int, continuation: CheckedContinuation<Bool, Never>)?
        var waits = 0
        /// How the read ended, once it has.
        var end: Outcome?
        var error: OriginError?

        /// Whether the read goes as far as piece `index` now: to its end (`wholeObject`), or
        /// `ahead` pieces past the furthest one a player reached.
        func covers(_ index: Int) -> Bool { wholeObject || index - ahead <= highestWanted }
    }

    private let state: Mutex<State>

    /// A read for the body that came for piece `index`.
    init(for index: Int) {
        state = Mutex(State(waiting: [index: []], highestWanted: index))
    }

    /// Piece `index`, once read.
    func piece(_ index: Int) async -> Outcome {
        await withCheckedContinuation { c in
            let now = state.withLock { s -> Outcome? in
                if let kept = s.kept.removeValue(forKey: index) { return .piece(kept) }
                if index < s.next { return .missed }
                if let end = s.end { return end }
                s.waiting[index, default: []].append(c)
                return nil
            }
            if let now { c.resume(returning: now) } else { want(index) }
        }
    }

    /// A player reached piece `index` (it waits for it, or read it from the store): the read
    /// goes on to `ahead` pieces past it.
    func want(_ index: Int) {
        let reader = state.withLock { s -> CheckedContinuation<Bool, Never>? in
            s.highestWanted = max(s.highestWanted, index)
            guard let r = s.reader, s.covers(r.index) else { return nil }
            s.reader = nil
            return r.continuation
        }
        reader?.resume(returning: true)
    }

    /// Waits, the body paused, until a player comes within `ahead` pieces of piece `index`;
    /// false when none did within `limit`.
    func demand(_ index: Int, within limit: Duration) async -> Bool {
        let wait = state.withLock { s -> Int in
            s.waits += 1
            return s.waits
        }
        let timer = Task {
            try? await Task.sleep(for: limit)
            let reader = self.state.withLock { s -> CheckedContinuation<Bool, Never>? in
                guard let r = s.reader, r.wait == wait else { return nil }
                s.reader = nil
                return r.continuation
            }
            reader?.resume(returning: false)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { c in
            let now = state.withLock { s -> Bool in
                if s.covers(index) { return true }
                s.reader = (index, wait, c)
                return false
            }
            if now { c.resume(returning: true) }
        }
    }

    /// The transfer error that ended the read, if one did.
    var error: OriginError? { state.withLock { $0.error } }

    /// The body came whole: it is read to its end (`wholeObject`), else up to `ahead` pieces
    /// past the highest one a fetch wants (a large file is not read to its end for the
    /// pieces at its start).
    func start(wholeObject: Bool, ahead: Int) {
        state.withLock { s in
            s.started = true
            s.wholeObject = wholeObject
            s.ahead = ahead
        }
    }

    /// Whether piece `index` is still to be read.
    func reads(_ index: Int) -> Bool {
        state.withLock { $0.covers(index) }
    }

    /// Whether the body is being read and will reach piece `index` without reading further
    /// for it (a fetch for a piece far past it asks the peers first).
    func reaches(_ index: Int) -> Bool {
        state.withLock { s in
            s.started && s.end == nil && index >= s.next && s.covers(index)
        }
    }

    /// Piece `index`, verified and kept, to the fetches that wait for it.
    func deliver(_ index: Int, _ bytes: [UInt8]) {
        let waiters = state.withLock { s -> [CheckedContinuation<Outcome, Never>]? in
            s.next = index + 1
            guard let waiters = s.waiting.removeValue(forKey: index) else { return nil }
            if waiters.isEmpty { s.kept[index] = bytes }
            return waiters
        }
        for waiter in waiters ?? [] { waiter.resume(returning: .piece(bytes)) }
    }

    /// Ends the read: the pieces still waited for get `outcome` (`.missed` or `.failed`).
    func finish(_ outcome: Outcome, error: OriginError? = nil) {
        let waiters = state.withLock { s -> [CheckedContinuation<Outcome, Never>] in
            s.end = outcome
            s.error = error
            let all = s.waiting.values.flatMap { $0 }
            s.waiting = [:]
            return all
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }
}
