// Work that blocks — a GStreamer pipeline set to NULL, an ALSA drain, a server's grace for its
// last requests, a wait for helper threads — must not run on Swift's cooperative pool: it has
// one thread per core (two here), and every async route of every server in the process waits
// for them. `onOwnThread` runs such work on a thread of its own and suspends the caller.

import Foundation

/// Runs `body` on a new thread named `name` and returns its result to the (suspended) caller.
public func onOwnThread<T: Sendable>(_ name: String, _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (done: CheckedContinuation<T, Never>) in
        Thread.detachNewThread {
            ThreadName.set(name)
            done.resume(returning: body())
        }
    }
}
