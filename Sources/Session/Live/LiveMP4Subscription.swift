// A live.mp4 client's subscription: its init segment, then a fragment per frame from a
// keyframe on, as fMP4 bytes boxed for this client (LiveClientMux). It ends when the stream restarts at a new format, and when the
// feed it follows moves to another camera (an fMP4 stream has one init segment): the player
// reconnects, to the new stream. It joins the hub when made, so it counts as a client (and
// toward `live.maxClients`) from its request on.
//
// With sound (the camera's microphone runs when the stream starts, and the client did not ask
// for `audio=0`), its muxer takes the camera's AAC packets too, each placed at its capture
// time from the client's first keyframe.

import CameraCore
import Movie
import Subscriptions
import SystemSupport

public final class LiveMP4Subscription: Subscription, Sendable {
    private struct State {
        var hub: LiveHub?
        var wake: (@Sendable () -> Void)?
        /// Made at the stream's start.
        var mux: LiveClientMux?
        var sound: SoundSubscription?
    }
    private let state = Locked(State())
    /// AAC packets as the microphone's thread delivers them, until the pump muxes them.
    private let packets = Locked(SoundQueue())
    /// The session whose microphone the stream takes, when it should carry sound.
    private let session: CaptureSession?
    private var id: ObjectIdentifier { ObjectIdentifier(self) }

    init(session: CaptureSession?, join: (_ id: ObjectIdentifier, _ wake: @escaping @Sendable () -> Void) -> LiveHub) {
        self.session = session
        let state = self.state
        let hub = join(ObjectIdentifier(self)) { state.withLock { $0.wake }?() }
        state.withLock { $0.hub = hub }
    }

    public func attach(wake: @escaping @Sendable () -> Void) {
        state.withLock { $0.wake = wake }
        wake()  // what arrived before the waker did
    }

    public func next() -> Pull<[UInt8]> {
        // One pump calls next at a time; the lock orders it with cancel.
        state.withLock { s in
            guard let hub = s.hub else { return .end }
            // Sound once the first keyframe set time 0 (until then it waits in the queue).
            if let mux = s.mux, mux.started {
                switch mux.sound(packets.withLock { $0.take() }) {
                case .bytes(let b) where !b.isEmpty: return .item(b)
                case .bytes: break
                case .end: return .end
                }
            }
            switch hub.next(id) {
            case .start(let info):
                if let session, let (mux, sound) = withSound(session, info) {
                    (s.mux, s.sound) = (mux, sound)
                } else {
                    guard let mux = try? LiveClientMux(info, sound: nil) else { return .end }
                    s.mux = mux
                }
                return .item(s.mux!.initSegment)
            case .unit(let u):
                guard let mux = s.mux else { return .end }
                switch mux.picture(u) {
                case .bytes(let b): return .item(b)
                case .end: return .end
                }
            case .wait: return .wait
            case .end, .moved: return .end
            }
        }
    }

    /// A muxer of picture and sound for this client, and its subscription to the camera's AAC
    /// packets; nil when no microphone runs (the stream is then the picture alone).
    private func withSound(_ session: CaptureSession, _ info: LiveStreamInfo) -> (LiveClientMux, SoundSubscription)? {
        guard let track = session.soundTrack(.aac),
              let mux = try? LiveClientMux(info, sound: track) else { return nil }
        let packets = self.packets, state = self.state
        guard let sound = session.subscribeSound(track, { packet in
            packets.withLock { $0.add(packet) }
            state.withLock { $0.wake }?()
        }) else { return nil }
        return (mux, sound)
    }

    public func cancel() {
        let (hub, sound) = state.withLock { s in
            defer { s = State() }
            return (s.hub, s.sound)
        }
        sound?.cancel()
        hub?.unsubscribe(id)
    }

    deinit {  // never pumped (a HEAD, or an answer not sent)
        let (hub, sound) = state.withLock { ($0.hub, $0.sound) }
        sound?.cancel()
        hub?.unsubscribe(id)
    }
}

/// The packets a client has not muxed yet, bounded: a client that stops reading holds at
/// most five seconds of sound (its picture is cut back by the hub).
struct SoundQueue {
    static let limit = 240
    private var packets: [AudioPacket] = []

    mutating func add(_ packet: AudioPacket) {
        if packets.count >= Self.limit { packets.removeFirst(packets.count - Self.limit + 1) }
        packets.append(packet)
    }

    mutating func take() -> [AudioPacket] {
        defer { packets.removeAll(keepingCapacity: true) }
        return packets
    }
}
