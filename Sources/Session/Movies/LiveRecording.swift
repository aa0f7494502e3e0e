// A recording that shares the live encode (issue 27): started while live clients watch, with
// the live encoder's settings (H.264, the same preset, constant quality, not a timelapse), the
// movie takes the live stream's access units instead of encoding the frames a second time. It
// pumps a LiveStreamSubscription, handing each unit to the recorder from a keyframe on; it asks the encoder for
// an IDR each second (the movie's fragments start at one: a crash loses at most a second, as
// with its own encoder) and, when the recorder had no room for a unit, skips to the next IDR.
// The stream restarting (a new format, a turn by 90°) ends the movie (`formatChanged`), as a
// prepare ends a recording of frames. The pixels are the live stream's: zoom, rotation and
// mirror are in them, and the file has no display matrix.

import Movie
import SystemSupport

final class LiveRecording: Sendable {
    private let units: LiveStreamSubscription
    private let recorder: MovieRecorder
    private let generation: Int
    private let onRestart: @Sendable () -> Void
    private struct State {
        var stopped = false
        var needKeyframe = true
        var lastKeyframe: Int64?
    }
    private let state = Locked(State())

    /// Feeds `recorder` the stream of `generation` (the one it was set up for); `onRestart`
    /// when that stream ends.
    init(hub: LiveHub, generation: Int, recorder: MovieRecorder, onRestart: @escaping @Sendable () -> Void) {
        units = LiveStreamSubscription(hub: hub, kind: "movie")
        self.generation = generation
        self.recorder = recorder
        self.onRestart = onRestart
    }

    func start() {
        units.attach { [weak self] in self?.drain() }
        drain()
    }

    /// Under the state's lock, as its pull is: the subscription has one caller at a time.
    func stop() {
        state.withLock { s in
            guard !s.stopped else { return }
            s.stopped = true
            units.cancel()
        }
    }

    private func drain() {
        let restarted = state.withLock { s -> Bool in
            guard !s.stopped else { return false }
            while true {
                switch units.next() {
                case .item(.start(_, let g)):
                    guard g == generation else { return true }  // another stream than the movie's
                case .item(.unit(let u)):
                    if s.needKeyframe && !u.keyframe { continue }
                    if u.keyframe {
                        s.lastKeyframe = u.pts
                        s.needKeyframe = false
                    } else if let k = s.lastKeyframe, u.pts - k >= LiveEncoder.ticksPerSecond {
                        units.requestKeyframe()
                    }
                    if !recorder.submit(unit: u.bytes, time: u.time, keyframe: u.keyframe) {
                        s.needKeyframe = true
                        units.requestKeyframe()
                    }
                case .wait:
                    return false
                case .end:  // the stream ended (a new encoder)
                    return true
                }
            }
        }
        if restarted {
            stop()
            onRestart()
        }
    }
}
