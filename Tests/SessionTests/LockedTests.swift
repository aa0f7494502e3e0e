// SystemSupport.Locked under contention, as ThreadSanitizer sees it (make test-tsan). A
// Locked<()> — a turn, as StoreDirectory and StorageRetention take — once put its zero-sized
// value at the address of its mutex pointer: one thread reading the pointer on its way into
// `withLock` "raced" with another's access to the value inside it (a clean-clone run, a photo
// stored while retention deleted one). Any report here fails the sanitizer run.

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
