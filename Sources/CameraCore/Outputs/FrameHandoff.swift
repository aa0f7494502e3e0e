// The one way a frame leaves the capture thread. The capture thread hands the frame over —
// kept on the camera's lent buffer, or copied into a spare buffer the hand-off owns — and
// returns at once; the work on it runs on the shared EncodePool, where the hand-off is a lane
// with `workers` slots (frames in hand at once). It never blocks the capture thread: the only
// lock it takes there guards a few fields, and a copy happens outside it. Two policies, the
// two the outputs need:
//
// - newest wins (preview encode, photos, live, metadata): a frame that waits for a busy slot
//   is replaced by a newer one, counted as dropped (its job may be merged into the newer
//   one's: the photos it would have answered are answered by the newer frame);
// - a bounded queue (movie, ring): up to `limit` frames wait in order; one that finds the
//   queue full is not taken, and is counted as dropped.
//
// A free slot counts as room: a frame never waits or is dropped while a slot could take it.
// Each slot has its own work (made by the `worker` factory the first time a frame needs it,
// kept with the lane, used by whichever pool thread serves that frame): a one-slot lane has
// exactly one — a live encoder, a movie's writer — and frames reach it one at a time, in
// order. Closing lets the frames already taken be worked on; nothing taken is lost, and the
// lane leaves the pool once it has no frame left.
//
// A hand-off that `lends` keeps a frame the camera lends (a V4L2 mmap buffer) instead of
// copying it: the buffer goes back to the driver once its work is done or a newer frame replaced it.

import Foundation
import SystemSupport

/// A video output's hand-off. Video alone: a microphone's buffers go to their outputs on its
/// own capture thread (tens of microseconds each), so nothing of audio needs a lane.
public final class FrameHandoff<Job: Sendable>: Sendable {
    public enum Policy: Sendable, Equatable {
        case newestWins
        case queue(limit: Int)
    }

    /// The work done on one taken frame, on a pool thread. Made once per slot by the `worker`
    /// factory: it may keep state from frame to frame (an encoder's handles, a movie's writer).
    public typealias Work = (_ frame: borrowing RawFrame, _ job: Job) -> Void

    private let core: HandoffCore<Job>
    /// Frames this hand-off may have in work at once (at most the pool's threads).
    public let workers: Int
    /// What the hand-off is for (`rear-photo`), for logs and figures.
    public let name: String

    /// A lane of `pool` with `workers` slots. `merge` combines the job of a frame replaced
    /// under `newestWins` into the newer frame's. `lends`: keep a lent frame's buffer rather
    /// than copy it.
    public init(name: String, workers: Int = 1, policy: Policy,
                merge: (@Sendable (_ older: Job, _ newer: Job) -> Job)? = nil,
                lends: Bool = false, pool: EncodePool,
                worker makeWork: @escaping @Sendable () -> Work) {
        let n = max(1, min(workers, pool.threads))
        self.workers = n
        self.name = name
        core = HandoffCore(slots: n, policy: policy, merge: merge, lends: lends, pool: pool, makeWork: makeWork)
    }

    /// A hand-off let go without `close` (a camera that failed to start) still leaves the
    /// pool, once the frames it took are worked off.
    deinit { core.finish(then: nil) }

    /// Hands `frame` over for work, with `job`. False when it was not taken: the hand-off is
    /// closed, or (queue policy) full; a full queue counts it as dropped. `keep`: a frame a
    /// client is waiting for (a synchronized set's moment) is queued even past the limit, and
    /// nothing waiting gives way to it.
    @discardableResult
    public func submit(_ frame: borrowing RawFrame, _ job: Job, keep: Bool = false) -> Bool { core.submit(frame, job, keep: keep) }

    /// Frames taken by copying their bytes, and frames taken on the camera's lent buffer.
    public var copied: UInt64 { core.locked { $0.copied } }
    public var lent: UInt64 { core.locked { $0.lent } }

    /// What the hand-off has done: frames taken (copied or lent), frames worked on, the time
    /// spent working, and the milliseconds of the last frames' work (a moving average).
    public var figures: HandoffFigures {
        core.locked { f in
            HandoffFigures(taken: f.copied + f.lent, dropped: f.dropped, worked: f.worked, workSeconds: f.workSeconds,
                           msPerFrame: f.msPerFrame)
        }
    }

    /// Frames taken and not yet worked off (waiting or in hand).
    public var backlog: Int { core.locked { $0.queue.count + $0.busy } }

    /// No frame waiting or in hand: the next one would be taken by a free slot at once.
    public var isIdle: Bool { core.locked { $0.queue.isEmpty && $0.busy == 0 } }

    /// Takes no more frames, works off those taken, and returns once they are done. From a
    /// pool thread it only stops the intake (the frame it would wait for may be its own).
    /// Idempotent.
    public func close() { core.close() }

    /// Takes no more frames; `then` runs on a pool thread once the frames taken are worked off.
    public func finish(then: (@Sendable () -> Void)?) { core.finish(then: then) }
}

/// A hand-off's figures (`FrameHandoff.figures`).
public struct HandoffFigures: Sendable, Equatable {
    public var taken: UInt64
    public var dropped: UInt64
    public var worked: UInt64
    public var workSeconds: Double
    public var msPerFrame: Double

    public init(taken: UInt64 = 0, dropped: UInt64 = 0, worked: UInt64 = 0, workSeconds: Double = 0, msPerFrame: Double = 0) {
        self.taken = taken
        self.dropped = dropped
        self.worked = worked
        self.workSeconds = workSeconds
        self.msPerFrame = msPerFrame
    }

    /// Two hand-offs' figures as one output's (a movie's before and after a restart).
    public static func + (a: HandoffFigures, b: HandoffFigures) -> HandoffFigures {
        HandoffFigures(taken: a.taken + b.taken, dropped: a.dropped + b.dropped, worked: a.worked + b.worked,
                       workSeconds: a.workSeconds + b.workSeconds, msPerFrame: b.worked > 0 ? b.msPerFrame : a.msPerFrame)
    }
}

/// The hand-off's state and its lane. Every field is guarded by `condition`.
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
        /// The slots' works not in use (made on demand, at most one per slot).
        var works: [WorkBox] = []
        var open = true
        /// Frames in a slot's hand.
        var busy = 0
        /// Left the pool (closed and worked off): nothing more to do.
        var left = false
        var dropped: UInt64 = 0
        var copied: UInt64 = 0
        var lent: UInt64 = 0
        var worked: UInt64 = 0
        var workSeconds = 0.0
        var msPerFrame = 0.0
        var then: (@Sendable () -> Void)?
    }

    /// NSCondition rather than `Locked`: `close` waits on it for the frames in hand.
    private let condition = NSCondition()
    private var fields = Fields()
    private let slots: Int
    private let policy: FrameHandoff<Job>.Policy
    private let merge: (@Sendable (Job, Job) -> Job)?
    private let lends: Bool
    private let pool: EncodePool
    private let makeWork: @Sendable () -> FrameHandoff<Job>.Work
    /// Set once, right after init, before any frame can be submitted.
    private var lane: EncodePool.Lane?

    init(slots: Int, policy: FrameHandoff<Job>.Policy, merge: (@Sendable (Job, Job) -> Job)?, lends: Bool,
         pool: EncodePool, makeWork: @escaping @Sendable () -> FrameHandoff<Job>.Work) {
        self.slots = slots
        self.policy = policy
        self.merge = merge
        self.lends = lends
        self.pool = pool
        self.makeWork = makeWork
        lane = pool.join { [weak self] in self?.takeForPool() ?? .gone }
    }

    func locked<R>(_ body: (inout Fields) -> R) -> R {
        condition.lock()
        defer { condition.unlock() }
        return body(&fields)
    }

    /// Frames that may wait beside the free slots.
    private var waitingRoom: Int {
        switch policy {
        case .newestWins: 1
        case .queue(let limit): max(1, limit)
        }
    }

    func submit(_ frame: borrowing RawFrame, _ job: Job, keep: Bool) -> Bool {
        let room = waitingRoom
        let lease = lends ? frame.lease : nil
        let buffer = locked { f -> FrameBuffer?? in
            guard f.open else { return nil }
            if case .queue = policy, !keep, f.queue.count >= room + slots - f.busy {
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
        while !keep, fields.queue.count >= room + slots - fields.busy, !fields.queue.isEmpty {
            let older = fields.queue.removeFirst()
            if let b = older.buffer { fields.spare.append(b) }
            fields.dropped += 1
            if let merge { entry.job = merge(older.job, entry.job) }
            replaced.append(older)
        }
        fields.queue.append(entry)
        condition.unlock()
        replaced.removeAll()
        pool.signal()
        return true
    }

    fileprivate final class WorkBox {
        let work: FrameHandoff<Job>.Work
        /// The pool thread that used it last (under the lane's lock): a thread takes its own
        /// back when it can, so an encoder's buffers stay warm in that core's cache.
        var lastThread: pthread_t?
        init(_ w: @escaping FrameHandoff<Job>.Work) { work = w }
    }
    /// A taken frame and the slot's work, held by the work closure until done (then emptied,
    /// so nothing of the frame, the camera's buffer above all, outlives the moment it counts
    /// as done).
    private final class Taken: @unchecked Sendable {  // handed from the taking thread to the one working, under the pool's lock
        var entry: Entry?
        let box: WorkBox?
        init(_ e: Entry, _ box: WorkBox?) { entry = e; self.box = box }
    }

    /// A pool thread asks for this lane's next frame: the work to run on it, if there is one.
    /// Called with the pool's lock held (the order is pool, then lane, everywhere).
    private func takeForPool() -> EncodePool.Take {
        condition.lock()
        guard !fields.queue.isEmpty, fields.busy < slots else {
            condition.unlock()
            return .none
        }
        fields.busy += 1
        let me = pthread_self()
        let mine = fields.works.firstIndex { $0.lastThread.map { pthread_equal($0, me) != 0 } ?? false }
        let work = mine.map { fields.works.remove(at: $0) } ?? fields.works.popLast()
        let taken = Taken(fields.queue.removeFirst(), work)
        condition.unlock()
        return .work { [self] in run(taken) }
    }

    /// Works on a taken frame, on a pool thread, and gives its slot back.
    private func run(_ taken: Taken) {
        let box = taken.box ?? WorkBox(makeWork())  // a slot's first frame makes its work
        let start = Clock.monotonic()
        Self.work(taken, box.work)
        let seconds = Clock.monotonic() - start
        let buffer = taken.entry!.buffer
        taken.entry = nil  // the camera's buffer (the entry's lease) goes back before the frame counts as done
        condition.lock()
        fields.busy -= 1
        if let buffer { fields.spare.append(buffer) }
        box.lastThread = pthread_self()
        fields.works.append(box)
        fields.worked += 1
        fields.workSeconds += seconds
        fields.msPerFrame = fields.worked == 1 ? seconds * 1000 : fields.msPerFrame * 0.9 + seconds * 100
        let (finished, then, works) = leaveIfDoneLocked()
        condition.broadcast()  // `close` waits for the frames in hand
        condition.unlock()
        _ = works  // the slots' works (an encoder's handles) are let go outside the lock
        if finished { leave(); then?() }
        pool.signal()  // a slot is free: another frame of this lane may go
    }

    /// Runs `work` on the taken frame; no copy of its entry (and of the lease in it) outlives the call.
    private static func work(_ taken: Taken, _ work: FrameHandoff<Job>.Work) {
        let e = taken.entry!
        work(Sample(format: e.format, bytes: e.bytes, stride: e.stride, sequence: e.sequence, timestamp: e.timestamp), e.job)
    }

    /// Closed with nothing waiting or in hand: the lane is done (once), and its completion
    /// and works are taken. Called with the lock held; the caller leaves the pool after
    /// unlocking (`leave`: the pool's lock comes before a lane's, never after).
    private func leaveIfDoneLocked() -> (finished: Bool, then: (@Sendable () -> Void)?, works: [WorkBox]) {
        guard !fields.open, !fields.left, fields.queue.isEmpty, fields.busy == 0 else { return (false, nil, []) }
        fields.left = true
        defer { fields.then = nil; fields.works = [] }
        return (true, fields.then, fields.works)
    }

    private func leave() {
        if let lane { pool.leave(lane) }
    }

    func close() {
        // Asked before this lane's lock is taken: a pool thread holds the pool's lock while it
        // takes a lane's.
        let onPoolThread = pool.isPoolThread
        condition.lock()
        fields.open = false
        if !onPoolThread {
            while fields.busy > 0 || !fields.queue.isEmpty { condition.wait() }
        }
        let (finished, then, works) = leaveIfDoneLocked()
        condition.unlock()
        _ = works
        if finished { leave() }
        if finished, let then { pool.perform(then) }
    }

    func finish(then: (@Sendable () -> Void)?) {
        condition.lock()
        fields.open = false
        if let then { let before = fields.then; fields.then = { before?(); then() } }
        let (finished, now, works) = leaveIfDoneLocked()
        condition.unlock()
        _ = works
        if finished { leave() }
        if finished, let now { pool.perform(now) }  // never on the caller's thread: it may be the session's
    }
}
