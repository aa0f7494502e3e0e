// One client of `/cameras/{id}/live.mp4`: the live H.264 stream as fragmented MP4 — the init
// segment, then a fragment per frame from a keyframe on — for Media Source Extensions, ffplay
// and VLC. It ends when the stream restarts at a new format (the client reconnects).

import HTTPServer
import Session

final class LiveMP4Stream: StreamBody, Sendable {
    private let hub: LiveHub

    init(hub: LiveHub) { self.hub = hub }

    func attach(waker: @escaping @Sendable () -> Void) { hub.subscribe(ObjectIdentifier(self), wake: waker) }

    func next() -> StreamChunk {
        switch hub.next(ObjectIdentifier(self)) {
        case .data(let bytes): .data(bytes)
        case .wait: .wait
        case .end: .end
        }
    }

    func close() { hub.unsubscribe(ObjectIdentifier(self)) }
}
