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

public final class Locked<Value>: @unchecked Sendable {  // every access to `value` holds `mutex`
    // The mutex pointer first: it is read on the way *into* the lock, so nothing else may
    // share its address. Declared after it, a zero-sized value (`Locked(())`, a turn) sat at
    // the very address of the pointer, and one thread's read of the pointer "raced" with
    // another's access to the value inside the lock (TSan on a clean clone; LockedTests).
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        self.value = value
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
        return try body(&value)
    }
}
