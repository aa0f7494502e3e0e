// One viewer of the multipart MJPEG preview. It always takes the hub's newest frame, so a
// slow viewer skips frames instead of queueing them; it resends the last frame once a
// second when nothing new arrives (proxies and Home Assistant drop silent streams), and
// honours a per-client `?fps=N` cap. The cap is a schedule (GCRA), not a minimum gap: a
// frame may go out up to one interval ahead of the schedule (one frame of burst), so a cap
// equal to the camera's rate never holds a frame back, whatever the phase at which the
// viewer connected, while the long-run rate never exceeds it. (With half an interval of
// tolerance, a viewer that connected in the second half of a frame interval was held back
// at every publish and woken by a timer up to half an interval later: latency, and with
// hundreds of viewers a timer per viewer per frame.)
// Its source is looked up at every frame: a viewer of the main session moves with it to the
// camera it switches to, and counts as a viewer there (each camera encodes only while watched).

import CameraCore
import Foundation
import HTTPServer
import Session
import SystemSupport

/// Where a viewer's frames come from now: a camera's hub and its part cache.
typealias FrameSource = @Sendable () -> (FrameHub, PartCache)

final class MJPEGStream: StreamBody, Sendable {
    private let source: FrameSource
    private let minInterval: Double
    private struct Schedule {
        /// The hub this viewer is counted on.
        var hub: FrameHub
        var waker: (@Sendable () -> Void)?
        var lastSequence: UInt64?
        var lastSent = -Double.infinity
        /// The next due time; sending is allowed from `due - tolerance` on.
        var due = -Double.infinity
        var closed = false
    }
    private let schedule: Locked<Schedule>

    init(source: @escaping FrameSource, maxFps: Double) {
        self.source = source
        minInterval = maxFps > 0 ? 1 / maxFps : 0
        let hub = source().0
        schedule = Locked(Schedule(hub: hub))
        hub.addViewer()
    }

    func attach(waker: @escaping @Sendable () -> Void) { schedule.withLock { $0.waker = waker } }

    func next() -> StreamChunk {
        let now = Clock.monotonic()
        let (hub, parts) = source()
        let (moved, last, sentAt, due, waker) = schedule.withLock { s in
            var moved: FrameHub?
            if s.hub !== hub && !s.closed {
                moved = s.hub
                s.hub = hub
                s.lastSequence = nil
            }
            return (moved, s.lastSequence, s.lastSent, s.due, s.waker)
        }
        if let moved {  // the session moved to another camera: be counted there
            moved.removeViewer(ObjectIdentifier(self))
            hub.addViewer()
        }
        let allowedFrom = due - minInterval
        if let frame = hub.latestFrame {
            let fresh = frame.sequence != last && now >= allowedFrom
            if fresh || now - sentAt >= 1.0 {
                schedule.withLock {
                    $0.lastSequence = frame.sequence
                    $0.lastSent = now
                    // On a grid: a part sent a little late keeps the next one's slot, so the
                    // capture's jitter never adds up to a skipped frame when the cap is the
                    // camera's own rate (it did: runs of frames held back to the next tick);
                    // after a pause the grid starts again from now.
                    $0.due = now - due < minInterval ? due + minInterval : now + minInterval
                }
                return .data(parts.part(for: frame))
            }
        }
        guard let waker else { return .end }
        hub.park(ObjectIdentifier(self), lastSequence: last, notBefore: allowedFrom,
                 resendAt: sentAt + 1.0, wake: waker)
        return .wait
    }

    func close() {
        let hub = schedule.withLock { s -> FrameHub? in defer { s.closed = true }; return s.closed ? nil : s.hub }
        hub?.removeViewer(ObjectIdentifier(self))
    }
}

/// The multipart part of the newest frame, built once and shared by every viewer.
final class PartCache: Sendable {
    private let cached = Locked((sequence: UInt64(0), bytes: [UInt8]()))

    /// Viewers all read on MHD's one polling thread, so a miss is built once in practice; it
    /// is built outside the lock all the same (nothing is copied while a lock is held).
    func part(for frame: EncodedFrame) -> [UInt8] {
        if let hit = cached.withLock({ c in frame.sequence == c.sequence && !c.bytes.isEmpty ? c.bytes : nil }) { return hit }
        let bytes = Multipart.part(jpeg: frame.jpeg, timestamp: frame.timestampString)
        cached.withLock { c in
            if frame.sequence >= c.sequence { c = (frame.sequence, bytes) }
        }
        return bytes
    }
}

/// One Server-Sent-Events client of `/api/events`.
///
/// While no event comes it sends a comment (`: keep-alive`) every `heartbeat` seconds. The
/// connection waits suspended, and libmicrohttpd never polls a suspended connection: without
/// a write, a client that went away (a closed tab) would keep its connection, and its place
/// under `server.maxConnections` and `maxConnectionsPerAddress`, until the next event, which
/// on an idle camera may never come. The first write after the client left draws its reset,
/// the second fails and the connection is closed: within about two heartbeats.
final class EventStream: StreamBody, Sendable {
    private let events: EventHub
    private let mark: @Sendable (SessionEvent) -> SessionEvent
    private let heartbeat: Double
    private struct Beat {
        var waker: (@Sendable () -> Void)?
        var timer: Task<Void, Never>?
        var lastSent = Clock.monotonic()
        var due = false
        var closed = false
    }
    private let beat = Locked(Beat())

    /// Every camera's events, or only `camera`'s; `mark` says in each state whether its
    /// camera is the main one at the time it is sent.
    init(events: EventHub, initial: SessionEvent?, camera: String? = nil, heartbeat: Double = 3,
         mark: @escaping @Sendable (SessionEvent) -> SessionEvent = { $0 }) {
        self.events = events
        self.mark = mark
        self.heartbeat = heartbeat
        events.subscribe(ObjectIdentifier(self), initial: initial.map { [$0] } ?? [], camera: camera)
    }

    func attach(waker: @escaping @Sendable () -> Void) {
        let interval = heartbeat
        let timer = Task { [weak self] in
            while !Task.isCancelled {
                try? await Alarm.sleep(min(1, interval / 2))
                guard let self else { return }
                // Due once nothing was sent for a whole interval (events count as beats).
                let wake = self.beat.withLock { b -> (@Sendable () -> Void)? in
                    guard !b.closed, Clock.monotonic() - b.lastSent >= interval * 0.99 else { return nil }
                    b.due = true
                    return b.waker
                }
                wake?()
            }
        }
        let closed = beat.withLock { b -> Bool in
            if !b.closed { b.waker = waker; b.timer = timer }
            return b.closed
        }
        if closed { timer.cancel() }
    }

    func next() -> StreamChunk {
        guard let waker = beat.withLock({ $0.waker }) else { return .end }
        if let e = events.next(ObjectIdentifier(self), wake: waker).map(mark) {
            beat.withLock { $0.lastSent = Clock.monotonic(); $0.due = false }
            return .data(ServerSentEvent.format(event: e.name, data: e.json))
        }
        if beat.withLock({ b in defer { if b.due { b.due = false; b.lastSent = Clock.monotonic() } }; return b.due }) {
            return .data(ServerSentEvent.keepAlive)
        }
        return .wait
    }

    func close() {
        let timer = beat.withLock { b -> Task<Void, Never>? in
            b.closed = true
            b.waker = nil
            defer { b.timer = nil }
            return b.timer
        }
        timer?.cancel()
        events.unsubscribe(ObjectIdentifier(self))
    }
}

/// Session events on the wire: the SSE event name and its JSON.
extension SessionEvent {
    var name: String {
        switch self {
        case .state: "state"
        case .photo: "photo"
        case .recording: "recording"
        case .metadata: "metadata"
        }
    }

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let data: Data? = switch self {
        case .state(let s): try? encoder.encode(s)
        case .photo(let p): try? encoder.encode(PhotoJSON(p))
        case .recording(let r): try? encoder.encode(r)
        case .metadata(let m): try? encoder.encode(m)
        }
        return data.map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
