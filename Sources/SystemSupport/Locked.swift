// A value behind a pthread mutex: Synchronization.Mutex's shape (`withLock`), with a lock
// ThreadSanitizer understands. Swift's Mutex on Linux is a futex lock inside the standard
// library: uncontended it is an atomic that TSan may see, but a contended hand-over goes
// through the kernel (FUTEX_LOCK_PI), invisible to TSan, so every value it guards showed
// up as a data race between two `withLock`s of the same Mutex (make test-tsan, 6 reports
// in the first run, all of that kind). pthread_mutex_lock is intercepted by TSan, as
// swift-nio's NIOLock relies on, and costs the same uncontended.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public final class Locked<Value>: @unchecked Sendable {  // every access to the value holds `mutex`
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Never zero-sized, whatever `Value` is. A zero-sized stored property has no bytes of its
    /// own, so its address is one that something read on the way *into* the lock holds too:
    /// ThreadSanitizer then reported a `Locked(())` (a turn, as StoreDirectory and
    /// StorageRetention take) as racing with itself — the optimized build put the value at the
    /// mutex pointer's address, the debug build at the object's header (both on clean clones;
    /// LockedTests, 6 of 6 runs of the debug build). A byte beside it gives it its own.
    private var slot: Slot
    private struct Slot {
        var value: Value
        let own: UInt8 = 0
    }

    public init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        slot = Slot(value: value)
        mutex.initialize(to: pthread_mutex_t())
        let rc = pthread_mutex_init(mutex, nil)
        precondition(rc == 0, "pthread_mutex_init: \(rc)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock. `body` must not call `withLock` on the
    /// same value again (pthread's default mutex is not recursive; that would deadlock).
    @inline(__always) @discardableResult
    public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&slot.value)
    }
}
