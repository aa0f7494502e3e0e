// The photo output (AVCapturePhotoOutput's part here): pending requests, each fulfilled by
// the first frame exposed at or after the request, encoded at the photo's own quality.

import CameraCore
import Foundation
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

/// The requests waiting for a frame.
final class PhotoCapture: Sendable {
    private let pending = Locked<(open: Bool, tickets: [CaptureTicket])>((true, []))

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

    /// True when a frame exposed at `timestamp` would answer a ticket (no allocation).
    func isDue(at timestamp: Double) -> Bool {
        pending.withLock { p in p.tickets.contains { timestamp >= $0.requested } }
    }

    /// The tickets a frame exposed at `timestamp` answers, taken off the list. No
    /// allocation when nothing is pending (this runs for every frame).
    func due(at timestamp: Double) -> [CaptureTicket] {
        pending.withLock { p -> [CaptureTicket] in
            guard !p.tickets.isEmpty else { return [] }
            let due = p.tickets.filter { timestamp >= $0.requested }
            if !due.isEmpty { p.tickets.removeAll { t in due.contains { $0 === t } } }
            return due
        }
    }

    /// No more requests; those waiting answer nil at once.
    func close() {
        let waiting = pending.withLock { p -> [CaptureTicket] in
            p.open = false
            defer { p.tickets = [] }
            return p.tickets
        }
        for t in waiting { t.fulfil(nil) }
    }
}
