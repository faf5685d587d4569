import Dispatch
@testable import Gateway
import Synchronization
import Testing

/// Read-ahead plans run one at a time with a bounded queue: past it, a plan is refused (and
/// its list planned when read again) instead of piling up memory and CPU.
@Suite("Serial work")
struct SerialWorkTests {
    @Test func workPastTheBoundIsRefusedAndTheRestRunsInOrder() async {
        let queue = DispatchQueue(label: "test.serial-work")
        queue.suspend()  // the first item still running
        let work = SerialWork(label: "test", maxQueued: 3, queue: queue)
        let done = Mutex<[Int]>([])
        let taken = (0..<5).map { i in work.submit { done.withLock { $0.append(i) } } }
        #expect(taken == [true, true, true, false, false])
        queue.resume()
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in queue.async { c.resume() } }
        #expect(done.withLock { $0 } == [0, 1, 2])
        #expect(work.submit { done.withLock { $0.append(9) } }, "room again once the queue drained")
    }
}
