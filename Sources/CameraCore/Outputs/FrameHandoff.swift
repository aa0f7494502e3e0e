// The one way a frame leaves the capture thread. The capture thread copies the frame into a
// spare buffer the hand-off owns and returns at once; the hand-off's own threads (one, or a
// pool: µStreamer's `--workers`) take the frames and run the output's work on them. It never
// blocks the capture thread: the only lock it takes there guards a few fields, and the copy
// happens outside it. Two policies, the two the outputs need:
//
// - newest wins (preview encode, photos, metadata): a frame that waits for a busy worker is
//   replaced by a newer one, counted as dropped (its job may be merged into the newer one's:
//   the photos it would have answered are answered by the newer frame);
// - a bounded queue (movie): up to `limit` frames wait in order; one that finds the queue
//   full is not copied, and is counted as dropped.
//
// A worker that is idle counts as a free slot: a frame never waits or is dropped while a
// worker could take it. Closing lets the frames already taken be worked on, then ends the
// threads; nothing taken is lost, no thread outlives its hand-off.

import Foundation
import SystemSupport

public final class FrameHandoff<Job: Sendable>: Sendable {
    public enum Policy: Sendable, Equatable {
        case newestWins
        case queue(limit: Int)
    }

    /// The work done on one taken frame, on a hand-off thread. Made once per thread by the
    /// `worker` factory, on that thread: it may keep per-thread things (an encoder's handles).
    public typealias Work = (_ frame: borrowing RawFrame, _ job: Job) -> Void

    private let core: HandoffCore<Job>
    public let workers: Int

    /// Starts `workers` threads named `name` (`name-0`, `name-1`… when more than one, or when
    /// `numbered`: a pool whose size is a setting keeps one naming scheme at every size).
    /// `merge` combines the job of a frame replaced under `newestWins` into the newer frame's.
    public init(name: String, workers: Int = 1, numbered: Bool = false, policy: Policy,
                merge: (@Sendable (_ older: Job, _ newer: Job) -> Job)? = nil,
                worker makeWork: @escaping @Sendable () -> Work) {
        let n = max(1, workers)
        self.workers = n
        core = HandoffCore(workers: n, policy: policy, merge: merge)
        for i in 0..<n {
            let threadName = n == 1 && !numbered ? name : "\(name)-\(i)"
            let core = self.core
            let t = Thread {
                ThreadName.set(threadName)
                core.run(makeWork())
            }
            t.name = "viewfinder.\(threadName)"
            t.start()
        }
    }

    /// A hand-off let go without `close` (a camera that failed to start) still ends its
    /// threads, once they have worked off what they took.
    deinit { core.finish(then: nil) }

    /// Copies `frame` for the workers, with `job`. False when it was not taken: the hand-off
    /// is closed, or (queue policy) full; a full queue counts it as dropped.
    @discardableResult
    public func submit(_ frame: borrowing RawFrame, _ job: Job) -> Bool { core.submit(frame, job) }

    /// Frames taken and then replaced by a newer one, or refused by a full queue.
    public var dropped: UInt64 { core.locked { $0.dropped } }

    /// Frames taken and not yet worked off (waiting or in hand).
    public var backlog: Int { core.locked { $0.queue.count + $0.busy } }

    /// No frame waiting or in hand: the next one would be taken by an idle worker at once.
    public var isIdle: Bool { core.locked { $0.queue.isEmpty && $0.busy == 0 } }

    /// Takes no more frames, works off those taken, and returns once the threads have ended.
    /// From one of the hand-off's own threads it only stops the intake (it cannot wait for
    /// itself). Idempotent.
    public func close() { core.close() }

    /// Takes no more frames; `then` runs once the frames taken are worked off and the threads
    /// have ended, on the last of them (or at once, here, if they already have).
    public func finish(then: (@Sendable () -> Void)?) { core.finish(then: then) }
}

/// The hand-off's state and its threads' loop. Every field is guarded by `condition`.
private final class HandoffCore<Job: Sendable>: @unchecked Sendable {
    struct Entry {
        var buffer: FrameBuffer
        var format: VideoFormat
        var stride: Int
        var sequence: UInt64
        var timestamp: Double
        var job: Job
    }
    struct Fields {
        var queue: [Entry] = []
        /// Buffers no frame occupies; grows to what the policy can hold at once.
        var spare: [FrameBuffer] = []
        var open = true
        /// Frames in a worker's hand.
        var busy = 0
        /// Threads not ended; those not holding a frame (`alive - busy`) are free slots, also
        /// before they first reach their wait.
        var alive: Int
        var dropped: UInt64 = 0
        var threads: [pthread_t] = []
        var then: (@Sendable () -> Void)?
    }

    /// NSCondition rather than `Locked`: the workers sleep on it while the queue is empty.
    private let condition = NSCondition()
    private var fields: Fields
    private let policy: FrameHandoff<Job>.Policy
    private let merge: (@Sendable (Job, Job) -> Job)?

    init(workers: Int, policy: FrameHandoff<Job>.Policy, merge: (@Sendable (Job, Job) -> Job)?) {
        fields = Fields(alive: workers)
        self.policy = policy
        self.merge = merge
    }

    func locked<R>(_ body: (inout Fields) -> R) -> R {
        condition.lock()
        defer { condition.unlock() }
        return body(&fields)
    }

    /// Frames that may wait beside the idle workers.
    private var waitingRoom: Int {
        switch policy {
        case .newestWins: 1
        case .queue(let limit): max(1, limit)
        }
    }

    func submit(_ frame: borrowing RawFrame, _ job: Job) -> Bool {
        let room = waitingRoom
        let buffer = locked { f -> FrameBuffer? in
            guard f.open else { return nil }
            if case .queue = policy, f.queue.count >= room + f.alive - f.busy {
                f.dropped += 1
                return nil
            }
            return f.spare.popLast() ?? FrameBuffer()
        }
        guard let buffer else { return false }
        buffer.fill(from: frame.bytes)  // no lock held: this buffer is the capture thread's until queued
        var entry = Entry(buffer: buffer, format: frame.format, stride: frame.stride, sequence: frame.sequence,
                          timestamp: frame.timestamp, job: job)
        condition.lock()
        defer { condition.unlock() }
        guard fields.open else {
            fields.spare.append(buffer)
            return false
        }
        // Newest wins: the oldest waiting frames give way (their jobs merged into this one's).
        while fields.queue.count >= room + fields.alive - fields.busy, !fields.queue.isEmpty {
            let older = fields.queue.removeFirst()
            fields.spare.append(older.buffer)
            fields.dropped += 1
            if let merge { entry.job = merge(older.job, entry.job) }
        }
        fields.queue.append(entry)
        condition.signal()
        return true
    }

    /// One thread's life: take the oldest waiting frame, work on it outside the lock, give
    /// the buffer back; end once closed and nothing is left.
    func run(_ work: FrameHandoff<Job>.Work) {
        condition.lock()
        fields.threads.append(pthread_self())
        while true {
            while fields.queue.isEmpty && fields.open { condition.wait() }
            if fields.queue.isEmpty { break }  // closed, and nothing left to do
            let e = fields.queue.removeFirst()
            fields.busy += 1
            condition.unlock()
            let frame = RawFrame(format: e.format, bytes: e.buffer.bytes, stride: e.stride, sequence: e.sequence,
                                 timestamp: e.timestamp)
            work(frame, e.job)
            condition.lock()
            fields.busy -= 1
            fields.spare.append(e.buffer)
        }
        fields.alive -= 1
        let then = fields.alive == 0 ? fields.then : nil
        if fields.alive == 0 { fields.then = nil }
        condition.broadcast()  // `close` waits for the last thread
        condition.unlock()
        then?()
    }

    func close() {
        condition.lock()
        defer { condition.unlock() }
        fields.open = false
        condition.broadcast()
        let me = pthread_self()
        guard !fields.threads.contains(where: { pthread_equal($0, me) != 0 }) else { return }
        while fields.alive > 0 { condition.wait() }
    }

    func finish(then: (@Sendable () -> Void)?) {
        let now = locked { f -> Bool in
            f.open = false
            if f.alive == 0 { return true }
            if let then { let before = f.then; f.then = { before?(); then() } }
            return false
        }
        condition.broadcast()
        if now { then?() }
    }
}

/// A frame's bytes, reused from frame to frame; grows to the largest frame seen.
final class FrameBuffer: @unchecked Sendable {  // owned by one thread at a time, handed on under a lock
    private(set) var storage = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    private(set) var count = 0

    deinit { storage.deallocate() }

    func fill(from bytes: UnsafeRawBufferPointer) {
        if storage.count < bytes.count {
            storage.deallocate()
            storage = .allocate(byteCount: bytes.count, alignment: 64)
        }
        if bytes.count > 0 { storage.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        count = bytes.count
    }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[0..<count]) }
}
