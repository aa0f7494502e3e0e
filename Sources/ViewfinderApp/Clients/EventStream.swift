// One Server-Sent-Events client of `/api/events`, and session events as they go on the wire.

import Foundation
import HTTPServer
import Session
import SystemSupport

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
        case .motion: "motion"
        case .deleted: "deleted"
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
        case .motion(let m): try? encoder.encode(m)
        case .deleted(let d): try? encoder.encode(d)
        }
        return data.map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
