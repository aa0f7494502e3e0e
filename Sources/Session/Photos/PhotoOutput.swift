// The photo output (AVCapturePhotoOutput): pending requests, each fulfilled by the first
// frame exposed at or after the request, encoded at the photo's own quality on the output's
// lane of the shared pool. It wants a frame only while a request is due. When its slot is still busy
// with an earlier photo, the waiting frame is replaced by a newer one and the requests it
// would have answered move to that newer frame (newest wins, merged).
//
// Kept across runs; when a run ends, waiting requests answer nil at once.

import CameraCore
import Foundation
import JPEG
import SystemSupport

/// A pending photo: fulfilled once by the capture thread, awaited by the HTTP handler.
public final class CaptureTicket: Sendable {
    let quality: Int
    let requested: Double
    private let state = Locked<(result: EncodedFrame??, continuation: CheckedContinuation<EncodedFrame?, Never>?)>((nil, nil))

    init(quality: Int, requested: Double) {
        self.quality = quality
        self.requested = requested
    }

    func fulfil(_ frame: EncodedFrame?) {
        let c = state.withLock { s -> CheckedContinuation<EncodedFrame?, Never>? in
            guard s.result == nil else { return nil }
            s.result = .some(frame)
            defer { s.continuation = nil }
            return s.continuation
        }
        c?.resume(returning: frame)  // outside the lock
    }

    /// The photo, or nil if the camera stopped or `timeout` seconds passed.
    public func frame(timeout: Double) async -> EncodedFrame? {
        Alarm.after(timeout) { [weak self] in self?.fulfil(nil) }
        return await withCheckedContinuation { c in
            let ready = state.withLock { s -> EncodedFrame?? in
                if let result = s.result { return result }
                s.continuation = c
                return nil
            }
            if let ready { c.resume(returning: ready) }
        }
    }
}

/// The requests waiting for a frame, and the thread that encodes them.
final class PhotoOutput: CaptureOutput {
    private let pending = Locked<(open: Bool, tickets: [CaptureTicket])>((false, []))
    private let lane: FrameLane<Job>

    struct Job: Sendable {
        var tickets: [CaptureTicket]
        var sequence: UInt64
        var transform: FrameTransform
    }

    init(pool: EncodePool) {
        // A replaced frame's tickets are answered by the newer one.
        let merge: @Sendable (Job, Job) -> Job = { older, newer in
            var j = newer
            j.tickets = older.tickets + newer.tickets
            return j
        }
        lane = FrameLane { run in FrameHandoff(name: "\(run.camera)-photo", policy: .newestWins, merge: merge, pool: pool) {
            let encoder = FrameEncoder()  // this slot's libjpeg-turbo handles
            return { frame, job in
                for t in job.tickets {
                    let image = try? encoder.encode(frame, quality: t.quality, transform: job.transform, subsampling: .s422)
                    t.fulfil(image.map { EncodedFrame(jpeg: $0.jpeg, width: $0.width, height: $0.height,
                                                      sequence: job.sequence, timestamp: frame.timestamp) })
                }
            }
        } }
    }

    /// A ticket for the first frame exposed at or after `requested` (wall-clock seconds);
    /// answered at once with nil when the output is closed.
    func request(quality: Int, requested: Double) -> CaptureTicket {
        let ticket = CaptureTicket(quality: quality, requested: requested)
        let accepted = pending.withLock { p -> Bool in
            if p.open { p.tickets.append(ticket) }
            return p.open
        }
        if !accepted { ticket.fulfil(nil) }
        return ticket
    }

    var kind: OutputKind { .photo }

    var report: OutputReport {
        let waiting = pending.withLock { !$0.tickets.isEmpty }
        return OutputReport(type: .photo, active: waiting || !lane.isIdle, figures: lane.figures)
    }

    /// A request is due at this frame's exposure (no allocation: this runs for every frame).
    func wants(_ frame: borrowing RawFrame, now: Double) -> Bool {
        let timestamp = frame.timestamp
        return pending.withLock { p in p.tickets.contains { timestamp >= $0.requested } }
    }

    /// Takes the due tickets off the list and hands them, with the frame, to the thread.
    func take(_ frame: borrowing RawFrame, _ context: FrameContext) {
        let timestamp = frame.timestamp
        let due = pending.withLock { p -> [CaptureTicket] in
            let due = p.tickets.filter { timestamp >= $0.requested }
            if !due.isEmpty { p.tickets.removeAll { t in due.contains { $0 === t } } }
            return due
        }
        let job = Job(tickets: due, sequence: context.sequence, transform: context.transform)
        if !lane.submit(frame, job) { for t in due { t.fulfil(nil) } }  // closed meanwhile: as if the camera stopped
    }

    func runStarted(_ run: CaptureRun) {
        lane.start(run)
        pending.withLock { $0.open = true }
    }

    /// No more requests; the photos already taken are encoded, those still waiting answer nil.
    func runEnded() {
        let waiting = pending.withLock { p -> [CaptureTicket] in
            p.open = false
            defer { p.tickets = [] }
            return p.tickets
        }
        for t in waiting { t.fulfil(nil) }
        lane.end()
    }
}
