// One client of `/live.mp4` or `/cameras/{id}/live.mp4`: the live H.264 stream as fragmented
// MP4 — the init segment, then a fragment per frame from a keyframe on — for Media Source
// Extensions, ffplay and VLC. It ends when the stream restarts at a new format, and a main
// client's when the main session moves to another camera (an fMP4 stream has one init
// segment): the client reconnects, to the new stream.

import HTTPServer
import Session
import SystemSupport

/// How many live.mp4 streams are open (they count toward `live.maxClients`).
final class StreamCount: Sendable {
    private let count = Locked(0)
    var value: Int { count.withLock { $0 } }
    func add(_ n: Int) { count.withLock { $0 += n } }
}

final class LiveMP4Stream: StreamBody, Sendable {
    private let feed: SessionFeed
    private let hub = Locked<LiveHub?>(nil)
    private let clients: StreamCount
    private let closed = Locked(false)

    init(feed: SessionFeed, clients: StreamCount) {
        self.feed = feed
        self.clients = clients
        clients.add(1)
    }

    func attach(waker: @escaping @Sendable () -> Void) {
        let joined = feed.joinLive(ObjectIdentifier(self), kind: "mp4", wake: waker)
        hub.withLock { $0 = joined }
    }

    func next() -> StreamChunk {
        guard let hub = hub.withLock({ $0 }) else { return .end }
        return switch hub.next(ObjectIdentifier(self)) {
        case .initSegment(let bytes): .data(bytes)
        case .fragment(let f): .data(f.mp4)
        case .wait: .wait
        case .end, .moved: .end
        }
    }

    func close() {
        hub.withLock { h in defer { h = nil }; return h }?.unsubscribe(ObjectIdentifier(self))
        if closed.withLock({ c in defer { c = true }; return !c }) { clients.add(-1) }
    }

    deinit { if !closed.withLock({ $0 }) { clients.add(-1) } }  // never attached (the answer was not sent)
}
