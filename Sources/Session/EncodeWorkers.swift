// The encode threads of one running camera (µStreamer's `--workers`). The capture thread
// copies a frame into a spare buffer and hands it to an idle worker, or, when every worker
// is busy, leaves it as the one pending frame (replacing an older pending one: newest wins)
// for the first worker that finishes — so a worker never idles until the next capture while
// a frame waits, and the capture thread never waits for an encoder. Frames carry the
// session's sequence taken at hand-over, and the hub only ever moves forward, so a worker
// that finishes after a newer frame was published drops its own: viewers see frames in
// capture order.

import CameraCore
import Foundation
import JPEG
import SystemSupport

final class EncodeWorkers: Sendable {
    /// What one hand-over asks of a worker: the preview, photos, or both.
    struct Job: Sendable {
        var format: VideoFormat
        var stride: Int
        var timestamp: Double
        var sequence: UInt64
        var transform: FrameTransform
        var preview: (quality: Int, subsampling: ChromaSubsampling)?
        var photos: [CaptureTicket]
    }

    /// Encodes a job's frame, from the worker's thread; nil (a failure) is counted by the owner.
    typealias Encode = @Sendable (_ encoder: FrameEncoder, _ frame: borrowing RawFrame, _ quality: Int,
                                  _ transform: FrameTransform, _ subsampling: ChromaSubsampling, _ sequence: UInt64) -> EncodedFrame?

    private struct State {
        var idle: [Int]
        var open = true
        /// The newest frame no worker has taken yet.
        var pending: (buffer: FrameBuffer, job: Job)?
        /// Buffers neither a worker nor `pending` holds: one per worker and two more, so the
        /// capture thread always has one to fill.
        var spare: [FrameBuffer]
        /// Pending frames replaced by a newer one before a worker was free.
        var skipped: UInt64 = 0
    }
    private let state: Locked<State>
    /// Broadcast whenever a worker finishes a frame (`close` waits on it).
    private let finishedOne = NSCondition()
    private let workers: [Worker]

    let count: Int

    init(count: Int, name: String, encode: @escaping Encode, publish: @escaping @Sendable (EncodedFrame) -> Void) {
        let n = max(1, count)
        self.count = n
        state = Locked(State(idle: Array(0..<n), spare: (0..<(n + 2)).map { _ in FrameBuffer() }))
        workers = (0..<n).map { Worker(name: "\(name)-encode-\($0)", encode: encode, publish: publish) }
        for (i, w) in workers.enumerated() {
            w.start { [weak self] buffer in self?.finished(i, returning: buffer) }
        }
    }

    /// A pool let go without `close` (a camera that failed to start) still ends its threads.
    deinit {
        for w in workers { w.finish() }
    }

    /// Frames that were never encoded because a newer one replaced them while every worker was busy.
    var skipped: UInt64 { state.withLock { $0.skipped } }

    /// Copies `frame` for the workers: to an idle one, or as the pending frame. False only
    /// once the pool is closed (nothing taken). `job()` is called after the copy, once.
    func submit(_ frame: borrowing RawFrame, job: () -> Job) -> Bool {
        guard let buffer = state.withLock({ s -> FrameBuffer? in s.open ? s.spare.popLast() : nil }) else { return false }
        buffer.fill(from: frame.bytes)  // no lock held: this buffer is the capture thread's until handed on
        var j = job()
        let (accepted, worker) = state.withLock { s -> (Bool, Int?) in
            guard s.open else { s.spare.append(buffer); return (false, nil) }
            if let i = s.idle.popLast() { return (true, i) }
            if let old = s.pending {
                s.spare.append(old.buffer)
                s.skipped += 1
                j.photos = old.job.photos + j.photos  // the newer frame answers them too
            }
            s.pending = (buffer, j)
            return (true, nil)
        }
        if !accepted { for t in j.photos { t.fulfil(nil) } }  // closed while copying: as if the camera stopped
        if let worker { workers[worker].hand(buffer, j) }
        return accepted
    }

    /// A worker is done with `buffer`: it takes the pending frame if there is one, else idles.
    private func finished(_ i: Int, returning buffer: FrameBuffer) -> (FrameBuffer, Job)? {
        finishedOne.lock()
        defer { finishedOne.broadcast(); finishedOne.unlock() }
        return state.withLock { s -> (FrameBuffer, Job)? in
            s.spare.append(buffer)
            if let p = s.pending {
                s.pending = nil
                return (p.buffer, p.job)
            }
            s.idle.append(i)
            return nil
        }
    }

    /// No more hand-overs; returns once every frame taken (in hand or pending) has been
    /// published or dropped as older, then ends the threads. Idempotent.
    func close() {
        state.withLock { $0.open = false }
        finishedOne.lock()
        while state.withLock({ $0.idle.count < count || $0.pending != nil }) { finishedOne.wait() }
        finishedOne.unlock()
        for w in workers { w.finish() }
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

/// One encode thread with its own encoder (its libjpeg-turbo handles).
private final class Worker: Sendable {
    private struct Slot { var job: (FrameBuffer, EncodeWorkers.Job)?; var finishing = false }
    private let name: String
    private let encode: EncodeWorkers.Encode
    private let publish: @Sendable (EncodedFrame) -> Void
    private let slot = Locked(Slot())
    private let ready = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let finished = Locked(false)
    /// The thread's own id: `finish` from the thread itself (the pool's last reference let go
    /// by its `next` call) must not wait for itself.
    private let thread = Locked<pthread_t?>(nil)

    init(name: String, encode: @escaping EncodeWorkers.Encode, publish: @escaping @Sendable (EncodedFrame) -> Void) {
        self.name = name
        self.encode = encode
        self.publish = publish
    }

    /// `next(buffer)` returns the buffer once its frame is done and answers the next job, if
    /// one is already waiting.
    func start(next: @escaping @Sendable (FrameBuffer) -> (FrameBuffer, EncodeWorkers.Job)?) {
        let t = Thread { [self] in
            ThreadName.set(name)
            thread.withLock { $0 = pthread_self() }
            let encoder = FrameEncoder()
            while true {
                ready.wait()
                let taken = slot.withLock { s -> Slot in defer { s.job = nil }; return s }
                var job = taken.job
                while let (buffer, j) = job {
                    run(j, buffer.bytes, encoder: encoder)
                    job = next(buffer)
                }
                if taken.finishing { break }
            }
            done.signal()
        }
        t.name = name
        t.start()
    }

    /// From the capture thread, while this worker is idle (it was taken off the idle list).
    func hand(_ buffer: FrameBuffer, _ j: EncodeWorkers.Job) {
        slot.withLock { $0.job = (buffer, j) }
        ready.signal()
    }

    /// Ends the thread once its job in hand or waiting (if any) is done, and waits for it. Idempotent.
    func finish() {
        guard finished.withLock({ f -> Bool in defer { f = true }; return !f }) else { return }
        slot.withLock { $0.finishing = true }
        ready.signal()
        if let me = thread.withLock({ $0 }), pthread_equal(me, pthread_self()) != 0 { return }  // ends after this job
        done.wait()
    }

    private func run(_ j: EncodeWorkers.Job, _ bytes: UnsafeRawBufferPointer, encoder: FrameEncoder) {
        let frame = RawFrame(format: j.format, bytes: bytes, stride: j.stride, sequence: j.sequence, timestamp: j.timestamp)
        for ticket in j.photos {
            ticket.fulfil(encode(encoder, frame, ticket.quality, j.transform, .s422, j.sequence))
        }
        if let p = j.preview, let f = encode(encoder, frame, p.quality, j.transform, p.subsampling, j.sequence) {
            publish(f)
        }
    }
}
