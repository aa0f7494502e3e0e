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
//
// On an EncodePool (the preview) the hand-off starts no threads: it is a lane of the shared
// pool, with `workers` slots. And a hand-off that `lends` keeps a frame the camera lends
// (RawFrame.lease: a V4L2 mmap buffer) instead of copying it: the buffer goes back to the
// driver once the work on it is done, or once a newer frame replaced it.

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
    /// `numbered`: a pool whose size is a setting keeps one naming scheme at every size) — or,
    /// with `pool`, none: the hand-off is a lane of the pool with `workers` slots (at most the
    /// pool's threads). `merge` combines the job of a frame replaced under `newestWins` into
    /// the newer frame's. `lends`: keep a lent frame's buffer rather than copy it.
    public init(name: String, workers: Int = 1, numbered: Bool = false, policy: Policy,
                merge: (@Sendable (_ older: Job, _ newer: Job) -> Job)? = nil,
                lends: Bool = false, pool: EncodePool? = nil,
                worker makeWork: @escaping @Sendable () -> Work) {
        let n = max(1, pool.map { min(workers, $0.threads) } ?? workers)
        self.workers = n
        core = HandoffCore(workers: n, policy: policy, merge: merge, lends: lends)
        if let pool {
            core.joinPool(pool, makeWork)
            return
        }
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

    /// Frames taken by copying their bytes, and frames taken on the camera's lent buffer.
    public var copied: UInt64 { core.locked { $0.copied } }
    public var lent: UInt64 { core.locked { $0.lent } }

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
        /// The copy (nil when the frame is lent), and the lease that keeps a lent buffer.
        var buffer: FrameBuffer?
        var lease: FrameLease?
        var bytes: UnsafeRawBufferPointer
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
        /// Threads not ended (a lane: its slots, until it has finished); those not holding a
        /// frame (`alive - busy`) are free slots, also before they first reach their wait.
        var alive: Int
        var dropped: UInt64 = 0
        var copied: UInt64 = 0
        var lent: UInt64 = 0
        var threads: [pthread_t] = []
        var then: (@Sendable () -> Void)?
    }

    /// NSCondition rather than `Locked`: the workers sleep on it while the queue is empty.
    private let condition = NSCondition()
    private var fields: Fields
    private let policy: FrameHandoff<Job>.Policy
    private let merge: (@Sendable (Job, Job) -> Job)?
    private let lends: Bool
    /// Set when the hand-off is a lane of a pool (before any frame can be submitted).
    private var pool: EncodePool?
    private var lane: EncodePool.Lane?

    init(workers: Int, policy: FrameHandoff<Job>.Policy, merge: (@Sendable (Job, Job) -> Job)?, lends: Bool) {
        fields = Fields(alive: workers)
        self.policy = policy
        self.merge = merge
        self.lends = lends
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
        let lease = lends ? frame.lease : nil
        let buffer = locked { f -> FrameBuffer?? in
            guard f.open else { return nil }
            if case .queue = policy, f.queue.count >= room + f.alive - f.busy {
                f.dropped += 1
                return nil
            }
            if lease != nil { return .some(nil) }
            return f.spare.popLast() ?? FrameBuffer()
        }
        guard case .some(let copy) = buffer else { return false }
        copy?.fill(from: frame.bytes)  // no lock held: this buffer is the capture thread's until queued
        var entry = Entry(buffer: copy, lease: lease, bytes: copy?.bytes ?? frame.bytes, format: frame.format,
                          stride: frame.stride, sequence: frame.sequence, timestamp: frame.timestamp, job: job)
        condition.lock()
        guard fields.open else {
            if let copy { fields.spare.append(copy) }
            condition.unlock()
            return false
        }
        if copy == nil { fields.lent += 1 } else { fields.copied += 1 }
        // Newest wins: the oldest waiting frames give way (their jobs merged into this one's).
        var replaced: [Entry] = []  // a lent buffer goes back to the camera once its entry is gone
        while fields.queue.count >= room + fields.alive - fields.busy, !fields.queue.isEmpty {
            let older = fields.queue.removeFirst()
            if let b = older.buffer { fields.spare.append(b) }
            fields.dropped += 1
            if let merge { entry.job = merge(older.job, entry.job) }
            replaced.append(older)
        }
        fields.queue.append(entry)
        condition.signal()
        condition.unlock()
        replaced.removeAll()
        pool?.signal()
        return true
    }

    /// The oldest waiting frame, now in a worker's hand; nil when none waits or every slot is
    /// busy. Called with the lock held.
    private func takeLocked() -> Entry? {
        guard !fields.queue.isEmpty, fields.busy < fields.alive else { return nil }
        fields.busy += 1
        return fields.queue.removeFirst()
    }

    /// A worker is done with `e`. Called with the lock held; true when a closed lane has
    /// just worked off its last frame.
    private func doneLocked(_ e: Entry) -> Bool {
        fields.busy -= 1
        if let b = e.buffer { fields.spare.append(b) }
        return lane != nil && !fields.open && fields.queue.isEmpty && fields.busy == 0
    }

    private static func work(_ e: Entry, _ work: FrameHandoff<Job>.Work) {
        let frame = RawFrame(format: e.format, bytes: e.bytes, stride: e.stride, sequence: e.sequence,
                             timestamp: e.timestamp)
        work(frame, e.job)
    }

    /// One thread's life: take the oldest waiting frame, work on it outside the lock, give
    /// the buffer back; end once closed and nothing is left.
    func run(_ work: FrameHandoff<Job>.Work) {
        condition.lock()
        fields.threads.append(pthread_self())
        while true {
            while fields.queue.isEmpty && fields.open { condition.wait() }
            guard var e = takeLocked() else { break }  // closed, and nothing left to do
            condition.unlock()
            Self.work(e, work)
            e.lease = nil  // the camera's buffer goes back before the frame counts as done
            condition.lock()
            _ = doneLocked(e)
        }
        fields.alive -= 1
        let then = fields.alive == 0 ? fields.then : nil
        if fields.alive == 0 { fields.then = nil }
        condition.broadcast()  // `close` waits for the last thread
        condition.unlock()
        then?()
    }

    // MARK: On a pool

    private final class WorkBox { let work: FrameHandoff<Job>.Work; init(_ w: @escaping FrameHandoff<Job>.Work) { work = w } }
    /// A taken frame, held by its work closure until done (then emptied, so nothing of it,
    /// the camera's buffer above all, outlives the moment it counts as done).
    private final class Taken: @unchecked Sendable { var entry: Entry?; init(_ e: Entry) { entry = e } }

    func joinPool(_ pool: EncodePool, _ makeWork: @escaping @Sendable () -> FrameHandoff<Job>.Work) {
        self.pool = pool
        lane = pool.join { [weak self] in self?.takeForPool(makeWork) }
    }

    /// A pool thread asks for this lane's next frame: the work to run on it, if there is one.
    private func takeForPool(_ makeWork: @escaping @Sendable () -> FrameHandoff<Job>.Work) -> ((PoolThread) -> Void)? {
        condition.lock()
        let taken = takeLocked()
        condition.unlock()
        guard let e = taken, let id = lane?.id else { return nil }
        let held = Taken(e)
        return { [self] thread in
            let box = thread.kept(id) { WorkBox(makeWork()) }
            Self.work(held.entry!, box.work)
            held.entry!.lease = nil  // the camera's buffer goes back before the frame counts as done
            condition.lock()
            let finished = doneLocked(held.entry!)
            held.entry = nil
            let then = finished ? fields.then : nil
            if finished { fields.then = nil }
            condition.broadcast()
            condition.unlock()
            if finished { leavePool() }
            then?()
            pool?.signal()  // a slot is free: another frame of this lane may go
        }
    }

    private func leavePool() {
        if let pool, let lane { pool.leave(lane) }
    }

    /// A lane with nothing waiting or in hand.
    private var laneIdleLocked: Bool { fields.queue.isEmpty && fields.busy == 0 }

    func close() {
        // Asked before this lane's lock is taken: a pool thread holds the pool's lock while it
        // takes a lane's (the order is pool, then lane, everywhere).
        let onPoolThread = pool?.isPoolThread ?? false
        condition.lock()
        fields.open = false
        condition.broadcast()
        if lane != nil {
            let idle = laneIdleLocked
            if !idle && !onPoolThread {
                while !laneIdleLocked { condition.wait() }
            }
            let finished = laneIdleLocked
            let then = finished ? fields.then : nil
            if finished { fields.then = nil }
            condition.unlock()
            if finished { leavePool(); then?() }
            return
        }
        defer { condition.unlock() }
        let me = pthread_self()
        guard !fields.threads.contains(where: { pthread_equal($0, me) != 0 }) else { return }
        while fields.alive > 0 { condition.wait() }
    }

    func finish(then: (@Sendable () -> Void)?) {
        let now = locked { f -> Bool in
            f.open = false
            if lane != nil ? f.queue.isEmpty && f.busy == 0 : f.alive == 0 { return true }
            if let then { let before = f.then; f.then = { before?(); then() } }
            return false
        }
        condition.broadcast()
        if now {
            if lane != nil { leavePool() }
            then?()
        }
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
