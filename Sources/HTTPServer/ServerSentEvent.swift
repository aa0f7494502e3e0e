// Server-Sent Events (the WHATWG event-stream format): the framing, and the streamed body
// that pumps a subscription of events and keeps an idle connection honest.

import Subscriptions
import SystemSupport

public enum ServerSentEvent {
    /// One event: its name (`event:`) and its data, one `data:` line per line.
    public struct Message: Sendable {
        public var event: String
        public var data: String

        public init(event: String, data: String) {
            self.event = event
            self.data = data
        }
    }

    public static func format(event: String, data: String) -> [UInt8] {
        var s = "event: \(event)\n"
        for line in data.split(separator: "\n", omittingEmptySubsequences: false) { s += "data: \(line)\n" }
        return Array((s + "\n").utf8)
    }

    /// A comment line; keeps idle connections alive through proxies.
    public static let keepAlive = Array(": keep-alive\n\n".utf8)
}

/// An SSE response's body: the events of a subscription, framed, and a comment
/// (`: keep-alive`) whenever nothing was sent for `heartbeat` seconds.
///
/// The heartbeat is not only for proxies. The connection waits suspended, and libmicrohttpd
/// never polls a suspended connection: without a write, a client that went away (a closed
/// tab) would keep its connection, and its place under `server.maxConnections` and
/// `maxConnectionsPerAddress`, until the next event, which on an idle camera may never come.
/// The first write after the client left draws its reset, the second fails and the
/// connection is closed: within about two heartbeats.
///
/// Its time is a Timekeeper's (the system's unless a test's): a test moves a clock past a
/// heartbeat instead of waiting three seconds for one.
public final class ServerSentEventStream: Subscription, Sendable {
    private let events: any Subscription<ServerSentEvent.Message>
    private let heartbeat: Double
    private let timekeeper: any Timekeeper
    private struct Beat {
        var wake: (@Sendable () -> Void)?
        var timer: Task<Void, Never>?
        var lastSent: Double
        var due = false
        var closed = false
    }
    private let beat: Locked<Beat>

    public init(_ events: any Subscription<ServerSentEvent.Message>, heartbeat: Double = 3,
                timekeeper: any Timekeeper = SystemTimekeeper()) {
        self.events = events
        self.heartbeat = heartbeat
        self.timekeeper = timekeeper
        beat = Locked(Beat(lastSent: timekeeper.now))
    }

    public func attach(wake: @escaping @Sendable () -> Void) {
        events.attach(wake: wake)
        let interval = heartbeat, keeper = self.timekeeper
        let timer = Task { [weak self] in
            while !Task.isCancelled {
                try? await keeper.sleep(min(1, interval / 2))
                guard let self else { return }
                // Due once nothing was sent for a whole interval (events count as beats).
                let wake = self.beat.withLock { b -> (@Sendable () -> Void)? in
                    guard !b.closed, keeper.now - b.lastSent >= interval * 0.99 else { return nil }
                    b.due = true
                    return b.wake
                }
                wake?()
            }
        }
        let closed = beat.withLock { b -> Bool in
            if !b.closed { b.wake = wake; b.timer = timer }
            return b.closed
        }
        if closed { timer.cancel() }
    }

    public func next() -> Pull<[UInt8]> {
        switch events.next() {
        case .item(let e):
            let now = timekeeper.now
            beat.withLock { $0.lastSent = now; $0.due = false }
            return .item(ServerSentEvent.format(event: e.event, data: e.data))
        case .end:
            return .end
        case .wait:
            let now = timekeeper.now
            if beat.withLock({ b in defer { if b.due { b.due = false; b.lastSent = now } }; return b.due }) {
                return .item(ServerSentEvent.keepAlive)
            }
            return .wait
        }
    }

    public func cancel() {
        let timer = beat.withLock { b -> Task<Void, Never>? in
            b.closed = true
            b.wake = nil
            defer { b.timer = nil }
            return b.timer
        }
        timer?.cancel()
        events.cancel()
    }
}
