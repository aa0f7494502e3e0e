// One viewer of the multipart MJPEG preview. It always takes the hub's newest frame, so a
// slow viewer skips frames instead of queueing them; it resends the last frame once a
// second when nothing new arrives (proxies and Home Assistant drop silent streams), and
// honours a per-client `?fps=N` cap. The cap is a schedule (GCRA), not a minimum gap:
// a frame that arrives a little early against the schedule still goes out, so a cap equal
// to the camera's rate loses no frames to jitter, while the long-run rate never exceeds it.

import CameraCore
import Foundation
import HTTPServer
import Session
import Synchronization

final class MJPEGStream: StreamBody, Sendable {
    private let hub: FrameHub
    private let parts: PartCache
    private let minInterval: Double
    private struct Schedule {
        var waker: (@Sendable () -> Void)?
        var lastSequence: UInt64?
        var lastSent = -Double.infinity
        /// The next due time; sending is allowed from `due - tolerance` on.
        var due = -Double.infinity
        var closed = false
    }
    private let schedule = Mutex(Schedule())

    init(hub: FrameHub, parts: PartCache, maxFps: Double) {
        self.hub = hub
        self.parts = parts
        minInterval = maxFps > 0 ? 1 / maxFps : 0
        hub.addViewer()
    }

    func attach(waker: @escaping @Sendable () -> Void) { schedule.withLock { $0.waker = waker } }

    func next() -> StreamChunk {
        let now = Clock.monotonic()
        let (last, sentAt, due, waker) = schedule.withLock { ($0.lastSequence, $0.lastSent, $0.due, $0.waker) }
        let allowedFrom = due - minInterval / 2
        if let frame = hub.latestFrame {
            let fresh = frame.sequence != last && now >= allowedFrom
            if fresh || now - sentAt >= 1.0 {
                schedule.withLock {
                    $0.lastSequence = frame.sequence
                    $0.lastSent = now
                    $0.due = max(due, now) + minInterval
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
        let first = schedule.withLock { s -> Bool in defer { s.closed = true }; return !s.closed }
        if first { hub.removeViewer(ObjectIdentifier(self)) }
    }
}

/// The multipart part of the newest frame, built once and shared by every viewer.
final class PartCache: Sendable {
    private let cached = Mutex((sequence: UInt64(0), bytes: [UInt8]()))

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
final class EventStream: StreamBody, Sendable {
    private let events: EventHub
    private let waker = Mutex<(@Sendable () -> Void)?>(nil)

    init(events: EventHub, initial: SessionEvent?) {
        self.events = events
        events.subscribe(ObjectIdentifier(self), initial: initial)
    }

    func attach(waker: @escaping @Sendable () -> Void) { self.waker.withLock { $0 = waker } }

    func next() -> StreamChunk {
        guard let waker = self.waker.withLock({ $0 }) else { return .end }
        if let e = events.next(ObjectIdentifier(self), wake: waker) {
            return .data(ServerSentEvent.format(event: e.name, data: e.json))
        }
        return .wait
    }

    func close() { events.unsubscribe(ObjectIdentifier(self)) }
}

/// Session events on the wire: the SSE event name and its JSON.
extension SessionEvent {
    var name: String {
        switch self {
        case .state: "state"
        case .photo: "photo"
        }
    }

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let data: Data? = switch self {
        case .state(let s): try? encoder.encode(s)
        case .photo(let p): try? encoder.encode(PhotoJSON(p))
        }
        return data.map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
