// A recording that shares the live encode (issue 27): started while live clients watch, with
// the live encoder's settings (H.264, the same preset, constant quality, not a timelapse), the
// movie takes the live stream's access units instead of encoding the frames a second time. A
// LiveHub client hands each unit to the recorder from a keyframe on; it asks the encoder for
// an IDR each second (the movie's fragments start at one: a crash loses at most a second, as
// with its own encoder) and, when the recorder had no room for a unit, skips to the next IDR.
// The stream restarting (a new format, a turn by 90°) ends the movie (`formatChanged`), as a
// prepare ends a recording of frames. The pixels are the live stream's: zoom, rotation and
// mirror are in them, and the file has no display matrix.

import Movie
import SystemSupport

final class LiveRecording: Sendable {
    private let hub: LiveHub
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
        self.hub = hub
        self.generation = generation
        self.recorder = recorder
        self.onRestart = onRestart
    }

    private var id: ObjectIdentifier { ObjectIdentifier(self) }

    func start() {
        hub.subscribe(id, kind: "movie") { [weak self] in self?.drain() }
        drain()
    }

    func stop() {
        state.withLock { $0.stopped = true }
        hub.unsubscribe(id)
    }

    private func drain() {
        let restarted = state.withLock { s -> Bool in
            guard !s.stopped else { return false }
            while true {
                switch hub.next(id) {
                case .start:
                    guard hub.generation == generation else { return true }  // another stream than the movie's
                case .unit(let u):
                    if s.needKeyframe && !u.keyframe { continue }
                    if u.keyframe {
                        s.lastKeyframe = u.pts
                        s.needKeyframe = false
                    } else if let k = s.lastKeyframe, u.pts - k >= LiveEncoder.ticksPerSecond {
                        hub.requestKeyframe()
                    }
                    if !recorder.submit(unit: u.bytes, time: u.time, keyframe: u.keyframe) {
                        s.needKeyframe = true
                        hub.requestKeyframe()
                    }
                case .wait:
                    return false
                case .end, .moved:  // (a recording follows its own camera's hub: never moved)
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
