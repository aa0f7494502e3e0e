// One client of `/cameras/{id}/live.mp4`: the live H.264 stream as fragmented MP4 — the init
// segment, then a fragment per frame from a keyframe on — for Media Source Extensions, ffplay
// and VLC. It ends when the stream restarts at a new format (the client reconnects).

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
    private let hub: LiveHub
    private let clients: StreamCount
    private let closed = Locked(false)

    init(hub: LiveHub, clients: StreamCount) {
        self.hub = hub
        self.clients = clients
        clients.add(1)
    }

    func attach(waker: @escaping @Sendable () -> Void) { hub.subscribe(ObjectIdentifier(self), wake: waker) }

    func next() -> StreamChunk {
        switch hub.next(ObjectIdentifier(self)) {
        case .initSegment(let bytes): .data(bytes)
        case .fragment(let f): .data(f.mp4)
        case .wait: .wait
        case .end: .end
        }
    }

    func close() {
        hub.unsubscribe(ObjectIdentifier(self))
        if closed.withLock({ c in defer { c = true }; return !c }) { clients.add(-1) }
    }

    deinit { if !closed.withLock({ $0 }) { clients.add(-1) } }  // never attached (the answer was not sent)
}
