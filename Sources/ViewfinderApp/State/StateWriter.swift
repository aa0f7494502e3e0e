// When the saved state is written (issue 57): coalesced, so a slider dragged for a minute is
// at most one write a second, and the last change is always written within that second. A
// change with nothing written in the last `interval` is written at once; one that comes
// sooner waits for the interval's end and goes with every other change until then. A write
// that fails (a full disk, a read-only directory) leaves the change in memory, says why in
// `status`, and is tried again `retry` seconds on. One write at a time. Time is the injected
// Timekeeper's: a test moves it.

import JSON
import SystemSupport

public final class StateWriter: Sendable {
    /// What became of the writes.
    public struct Status: Sendable, Equatable {
        /// Whether everything changed so far is on disk.
        public var saved = true
        /// The last write's failure, until a write succeeds.
        public var error: String?
        /// Writes made (those that succeeded).
        public var writes = 0

        public init(saved: Bool = true, error: String? = nil, writes: Int = 0) {
            self.saved = saved
            self.error = error
            self.writes = writes
        }
    }

    private struct State {
        /// A change not written yet (its write due, or failed).
        var dirty = false
        /// A write is running: what it took is not on disk until it returns.
        var writing = false
        var error: String?
        var writes = 0
        var status: Status { Status(saved: !dirty && !writing, error: error, writes: writes) }
        /// A write is due (a task waits for its time) or running.
        var pending = false
        var lastWrite = -Double.infinity
        var closed = false
    }

    private let file: StateFile
    private let clock: any Timekeeper
    private let interval: Double
    private let retry: Double
    private let snapshot: @Sendable () -> JSONValue
    private let written: @Sendable (Status) -> Void
    private let state = Locked(State())
    /// Held for a write (the file's temporary name is one): never while `state` is.
    private let writing = Locked(())

    /// `snapshot` answers the state as it is now, called for each write while the writer
    /// holds its write lock (never `state`'s): it must not wait on anything a `changed()`
    /// caller may hold. `written` hears each write's outcome (the log, a test).
    public init(file: StateFile, clock: any Timekeeper = SystemTimekeeper(), interval: Double = 1, retry: Double = 10,
                snapshot: @escaping @Sendable () -> JSONValue, written: @escaping @Sendable (Status) -> Void = { _ in }) {
        self.file = file
        self.clock = clock
        self.interval = interval
        self.retry = retry
        self.snapshot = snapshot
        self.written = written
    }

    public var status: Status { state.withLock { $0.status } }

    /// Something saved changed: it is written within `interval`.
    public func changed() {
        let delay = state.withLock { s -> Double? in
            guard !s.closed else { return nil }
            s.dirty = true
            return schedule(&s)
        }
        if let delay { start(after: delay) }
    }

    /// Writes what is not written yet, now (at the server's stop), once a write under way has
    /// ended, and writes no more.
    public func close() {
        state.withLock { $0.closed = true }
        write(closing: true)  // after a write under way, whose rename must not be left behind
    }

    /// Marks a write due and answers its delay, unless one is due already.
    private func schedule(_ s: inout State, after failure: Bool = false) -> Double? {
        guard !s.pending, s.dirty, !s.closed else { return nil }
        s.pending = true
        return max(0, s.lastWrite + (failure ? retry : interval) - clock.now)
    }

    private func start(after delay: Double) {
        Task { [self] in
            if delay > 0 { try? await clock.sleep(delay) }
            write(closing: false)
        }
    }

    private func write(closing: Bool) {
        writing.withLock { _ in
            let go = state.withLock { s -> Bool in
                guard closing ? s.dirty : !s.closed else { return false }  // nothing due, or the stop's write came first
                s.dirty = false
                s.writing = true
                return true
            }
            if go { save() }
        }
    }

    private func save() {
        let result = Result { () throws(SystemError) in try file.save(snapshot()) }
        let (status, again) = state.withLock { s -> (Status, Double?) in
            s.lastWrite = clock.now
            s.pending = false
            s.writing = false
            switch result {
            case .success:
                s.writes += 1
                s.error = nil
            case .failure(let error):
                s.dirty = true  // still to be written
                s.error = error.description
            }
            if case .failure = result { return (s.status, schedule(&s, after: true)) }
            return (s.status, schedule(&s))  // a change made while this one was written
        }
        written(status)
        if let again { start(after: again) }
    }
}
