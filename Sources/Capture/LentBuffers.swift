// The buffers a camera lends past its frame callback (FrameLease), for V4L2 and libcamera alike.

import CameraCore
import Foundation
import SystemSupport

/// A camera's lent buffers: which are out, and which came back (to requeue on the capture
/// thread: the device is used by one thread, and a lease may end on any). V4L2 mmap buffers
/// and libcamera's requests are lent alike.
final class LentBuffers: Sendable {
    private struct State {
        var out = 0
        var returned: [Int] = []
    }
    private let state = Locked(State())
    private let condition = NSCondition()

    /// A lease on buffer `index`; `owner` (what the buffer's mapping belongs to) lives as long,
    /// and `back` runs once it is returned (to wake the thread that queues it again).
    func lend(_ index: Int, holding owner: (any AnyObject & Sendable)? = nil, back: (@Sendable () -> Void)? = nil) -> FrameLease {
        state.withLock { $0.out += 1 }
        return FrameLease { [self] in
            withExtendedLifetime(owner) {}
            state.withLock { $0.returned.append(index) }
            // Still counted out, so whatever `back` touches (the camera) is not closed yet.
            back?()
            condition.lock()
            state.withLock { $0.out -= 1 }
            condition.broadcast()
            condition.unlock()
        }
    }

    func takeReturned() -> [Int] {
        state.withLock { s in
            guard !s.returned.isEmpty else { return [] }
            defer { s.returned = [] }
            return s.returned
        }
    }

    /// True once no buffer is out; false when `timeout` seconds passed first.
    func waitUntilAllReturned(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while state.withLock({ $0.out }) > 0 {
            if !condition.wait(until: deadline) { return state.withLock { $0.out } == 0 }
        }
        state.withLock { $0.returned = [] }
        return true
    }
}
