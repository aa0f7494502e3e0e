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
        /// Its stream of the hub (it ends with it).
        var units: LiveStreamSubscription?
        var wake: (@Sendable () -> Void)?
        /// Made at the stream's start.
        var mux: LiveClientMux?
        var sound: SoundSubscription?
    }
    private let state = Locked(State())
    /// The session whose microphone the stream takes, when it should carry sound.
    private let session: CaptureSession?

    init(session: CaptureSession?, join: (_ wake: @escaping @Sendable () -> Void) -> LiveStreamSubscription) {
        self.session = session
        let state = self.state
        let units = join { state.withLock { $0.wake }?() }
        state.withLock { $0.units = units }
    }

    public func attach(wake: @escaping @Sendable () -> Void) {
        state.withLock { $0.wake = wake }
        wake()  // what arrived before the waker did
    }

    public func next() -> Pull<[UInt8]> {
        // One pump calls next at a time; the lock orders it with cancel.
        state.withLock { s in
            guard let units = s.units else { return .end }
            // Sound once the first keyframe set time 0 (until then it waits in its subscription).
            if let mux = s.mux, mux.started, let sound = s.sound {
                var packets: [AudioPacket] = []
                while case .item(let p) = sound.next() { packets.append(p) }
                switch mux.sound(packets) {
                case .bytes(let b) where !b.isEmpty: return .item(b)
                case .bytes: break
                case .end: return .end
                }
            }
            switch units.next() {
            case .item(.start(let info, _)):
                if let session, let (mux, sound) = withSound(session, info) {
                    (s.mux, s.sound) = (mux, sound)
                } else {
                    guard let mux = try? LiveClientMux(info, sound: nil) else { return .end }
                    s.mux = mux
                }
                return .item(s.mux!.initSegment)
            case .item(.unit(let u)):
                guard let mux = s.mux else { return .end }
                switch mux.picture(u) {
                case .bytes(let b): return .item(b)
                case .end: return .end
                }
            case .wait: return .wait
            case .end: return .end
            }
        }
    }

    /// A muxer of picture and sound for this client, and its subscription to the camera's AAC
    /// packets; nil when no microphone runs (the stream is then the picture alone).
    private func withSound(_ session: CaptureSession, _ info: LiveStreamInfo) -> (LiveClientMux, SoundSubscription)? {
        guard let track = session.soundTrack(.aac),
              let mux = try? LiveClientMux(info, sound: track), let sound = session.subscribeSound(track) else { return nil }
        let state = self.state
        sound.attach { state.withLock { $0.wake }?() }
        return (mux, sound)
    }

    public func cancel() {
        let (units, sound) = state.withLock { s in
            defer { s = State() }
            return (s.units, s.sound)
        }
        sound?.cancel()
        units?.cancel()
    }

    deinit {  // never pumped (a HEAD, or an answer not sent)
        let (units, sound) = state.withLock { ($0.units, $0.sound) }
        sound?.cancel()
        units?.cancel()
    }
}
