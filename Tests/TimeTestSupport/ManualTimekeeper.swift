// A clock a test advances (issue 45: time as an input, not a hazard). What sleeps on it wakes
// only when the test has moved it past its deadline, never by the wall clock; every wait asked
// of it is kept, so a test asserts a backoff's waits exactly instead of timing them.

import Foundation
import SystemSupport

public final class ManualTimekeeper: Timekeeper, Sendable {
    private struct Sleeper {
        let id: UInt64
        let deadline: Double
        let continuation: CheckedContinuation<Bool, Never>  // true: cancelled
    }
    private struct State {
        var now = 0.0
        var sleepers: [Sleeper] = []
        var requested: [Double] = []
        var cancelled: Set<UInt64> = []
        var nextID: UInt64 = 0
    }
    private let state = Locked(State())

    public init() {}

    /// Seconds the test has advanced it by.
    public var now: Double { state.withLock { $0.now } }
    /// Every wait asked of it, in order.
    public var requested: [Double] { state.withLock { $0.requested } }
    /// Tasks sleeping on it now.
    public var sleeping: Int { state.withLock { $0.sleepers.count } }

    public func sleep(_ seconds: Double) async throws(CancellationError) {
        let id = state.withLock { s in defer { s.nextID += 1 }; return s.nextID }
        let cancelled = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                let now = state.withLock { s -> Bool? in
                    s.requested.append(seconds)
                    if s.cancelled.remove(id) != nil { return true }
                    if seconds <= 0 { return false }
                    s.sleepers.append(Sleeper(id: id, deadline: s.now + seconds, continuation: c))
                    return nil
                }
                if let now { c.resume(returning: now) }
            }
        } onCancel: {
            let sleeper = state.withLock { s -> Sleeper? in
                guard let i = s.sleepers.firstIndex(where: { $0.id == id }) else {
                    s.cancelled.insert(id)  // not parked yet: it wakes as soon as it is
                    return nil
                }
                return s.sleepers.remove(at: i)
            }
            sleeper?.continuation.resume(returning: true)
        }
        if cancelled { throw CancellationError() }
    }

    /// Moves the clock on by `seconds`: every sleeper whose deadline it reaches wakes.
    public func advance(by seconds: Double) {
        let due = state.withLock { s -> [Sleeper] in
            s.now += seconds
            let now = s.now + 1e-9
            defer { s.sleepers.removeAll { $0.deadline <= now } }
            return s.sleepers.filter { $0.deadline <= now }
        }
        for sleeper in due { sleeper.continuation.resume(returning: false) }
    }

    /// Waits until `count` tasks sleep on it (an event: polled every millisecond, bounded by
    /// `timeout` of the wall clock). False when they did not come.
    public func waitForSleepers(_ count: Int = 1, timeout: Double = TestTime.patience) async -> Bool {
        let deadline = TestTime.deadline(timeout)
        while sleeping < count {
            if Date() >= deadline { return false }
            try? await Task.sleep(nanoseconds: 1_000_000)
        }
        return true
    }
}
