// SystemSupport.Locked under contention, as ThreadSanitizer sees it (make test-tsan). A
// Locked<()> — a turn, as StoreDirectory and StorageRetention take — once put its zero-sized
// value at an address read on the way into `withLock` (the mutex pointer's in the optimized
// build, the object's header in the debug one): one thread's read "raced" with another's
// access to the value inside the lock (clean-clone runs; the debug build's in 6 of 6 runs of
// this test). Any report here fails the sanitizer run.

import Dispatch
import SystemSupport
import Testing

@Suite struct LockedTests {
    @Test func twoThreadsTakingTurnsOnAnEmptyValue() {
        let turn = Locked(())
        let count = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<20_000 {
                turn.withLock { _ in count.withLock { $0 += 1 } }
            }
        }
        #expect(count.withLock { $0 } == 80_000)
    }
}
