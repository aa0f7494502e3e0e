// Blocking work in an async test runs on a thread of its own: Swift's cooperative pool has
// one thread per core (two here), and a test that computes or waits on one holds it from
// every other suite of the parallel run — servers stop answering, `eventually` loops miss
// their deadlines.

import Foundation
import SystemSupport

/// Runs blocking work on a thread of its own and awaits the result.
public func offload<T>(_ work: @escaping () throws -> T) async throws -> T {
    // The result comes back through a lock, not in the continuation: what the thread wrote
    // (a TestConnection's body, say) is then ordered before the test's reads for
    // ThreadSanitizer too, which reported those writes racing with the reads when the
    // continuation carried them (make test-tsan).
    let result = Locked<Result<UncheckedBox<T>, Error>?>(nil)
    let box = UncheckedBox(work)
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
        Thread {
            let r = Result { UncheckedBox(try box.value()) }
            result.withLock { $0 = r }
            c.resume()
        }.start()
    }
    return try result.withLock { $0! }.get().value
}

public struct UncheckedBox<T>: @unchecked Sendable {
    public let value: T
    public init(_ value: T) { self.value = value }
}

/// Whether `p` exits within `timeout` seconds (stretched under the sanitizers). Polled on a
/// thread of its own: `waitUntilExit` on a Dispatch global queue holds one of the threads
/// Swift concurrency runs on (on Linux they are the same pool) for as long as the process
/// lives — two such waits stalled every in-process server of the run.
public func waitForExit(_ p: Process, timeout: Double) async -> Bool {
    (try? await offload { waitForExitBlocking(p, timeout: timeout) }) ?? false
}

/// The same, on the calling thread (a thread of the test's own, or a quick wait after SIGKILL).
public func waitForExitBlocking(_ p: Process, timeout: Double) -> Bool {
    let deadline = TestTime.deadline(timeout)
    while p.isRunning && Date() < deadline { usleep(5_000) }
    return !p.isRunning
}
