// A motion event's movie, pre-roll included (issue 28). While motion recording is on, this is
// a client of the camera's live H.264 stream (so the one live encode also feeds it) and keeps
// the last seconds as a ring of whole GOPs: from a keyframe at least `preRoll` (plus a margin
// for the detector's own delay) before the newest frame, dropping a GOP only once the next
// keyframe is that old. It asks for a keyframe whenever the last is `preRoll` old, so the ring
// never holds much more than twice the pre-roll. An event's movie starts at the last keyframe
// at or before its first moving frame − preRoll, and goes on with the live units until the
// session says when to stop (the last moving frame + postRoll); an event starting before
// that extends the same movie.
//
// With the camera's microphone running, the ring keeps its AAC packets too (the camera's one
// AAC encode, subscribed while the ring runs), as far back as its oldest frame: an event's
// movie has the pre-roll's sound, each packet at its capture time as in any movie.

import Foundation
import Movie
import SystemSupport

final class MotionRecording: Sendable {
    /// Seconds kept beyond the pre-roll: the detector needs a few frames before it calls an
    /// event, and the session hears of it a moment later.
    static let margin = 1.0

    private let hub: LiveHub
    /// Called (on the encoder's thread) when the movie reached its stop time, or its stream ended.
    private let onDone: @Sendable (MovieRecorder, RecordingEndReason) -> Void

    private struct Movie {
        var recorder: MovieRecorder
        var stopAt: Double?
        var needKeyframe = false
    }
    private struct State {
        var preRoll: Double
        var ring: [AccessUnit] = []
        var sound: [AudioPacket] = []
        var soundTrack: AudioTrackInfo?
        var soundFeed: SoundSubscription?
        var generation: Int?
        var lastKeyframe: Double?
        var movie: Movie?
        var stopped = false
        /// The stream it pulls (a new one joined when the stream ends: a new encoder).
        var units: LiveStreamSubscription?
    }
    private let state: Locked<State>
    /// The camera's AAC subscription, when its microphone runs (asked again at each keyframe
    /// while there is none: a microphone may start later).
    private let subscribeSound: @Sendable () -> SoundSubscription?

    init(hub: LiveHub, preRoll: Double,
         sound: @escaping @Sendable () -> SoundSubscription?,
         onDone: @escaping @Sendable (MovieRecorder, RecordingEndReason) -> Void) {
        self.hub = hub
        self.onDone = onDone
        subscribeSound = sound
        state = Locked(State(preRoll: preRoll))
    }

    func start() {
        state.withLock { s in s.units = join() }
        drain()
    }

    /// The stream's subscription, attached (under the state's lock, as every call of it is:
    /// the subscription has one caller at a time).
    private func join() -> LiveStreamSubscription {
        let units = LiveStreamSubscription(hub: hub, kind: "motion")
        units.attach { [weak self] in self?.drain() }
        return units
    }

    /// No more units; the movie being written, if any, is the caller's to finish.
    func stop() -> MovieRecorder? {
        let (recorder, feed) = state.withLock { s in
            s.units?.cancel()
            s.units = nil
            s.stopped = true
            s.ring = []
            s.sound = []
            defer { s.movie = nil; s.soundFeed = nil; s.soundTrack = nil }
            return (s.movie?.recorder, s.soundFeed)
        }
        feed?.cancel()
        return recorder
    }

    /// The sound track an event's movie gets now (nil: no microphone runs).
    var soundTrack: AudioTrackInfo? { state.withLock { $0.soundTrack } }

    /// Seconds of frames the ring reaches back from its newest (the state's `preRollHeld`): an
    /// event that starts now gets this much before it, up to `preRoll`.
    var held: Double { state.withLock { s in (s.ring.last?.time ?? 0) - (s.ring.first?.time ?? 0) } }

    /// Seconds of sound the ring holds at most (its frames' reach), for the recorder's backlog.
    var soundSeconds: Double { state.withLock { s in (s.sound.last?.time ?? 0) - (s.sound.first?.time ?? 0) } }

    /// A packet of the camera's AAC (the microphone's thread): kept while the ring's frames
    /// reach back to it, and written into the event's movie as it comes.
    private func take(_ packet: AudioPacket) {
        state.withLock { s in
            guard !s.stopped else { return }
            s.sound.append(packet)
            let horizon = (s.ring.first?.time ?? packet.time) - 0.1
            if let k = s.sound.firstIndex(where: { $0.time >= horizon }), k > 0 { s.sound.removeFirst(k) }
            if let m = s.movie, m.recorder.hasAudio { m.recorder.submit(audio: packet) }
        }
    }

    /// Joins the camera's AAC encode when none is joined and a microphone runs.
    private func joinSound(_ s: inout State) {
        guard s.soundFeed == nil, let feed = subscribeSound(), let track = feed.track else { return }
        s.soundTrack = track
        s.soundFeed = feed
        feed.deliver { [weak self] in self?.take($0) }  // on the microphone's thread: take only queues
    }

    func setPreRoll(_ seconds: Double) { state.withLock { $0.preRoll = seconds } }

    /// The stream and the first unit's time for an event whose first moving frame is `start`:
    /// the last keyframe at or before start − preRoll, or the ring's first when it is younger.
    func firstFrame(for start: Double) -> (time: Double, info: LiveStreamInfo)? {
        state.withLock { s in
            guard let info = hub.info, s.generation == hub.generation else { return nil }
            let keys = s.ring.filter(\.keyframe)
            guard let first = keys.last(where: { $0.time <= start - s.preRoll }) ?? keys.first else { return nil }
            return (first.time, info)
        }
    }

    /// Writes the ring from the keyframe at `from` into `recorder`, then every live unit until `finish(at:)`'s time.
    func record(into recorder: MovieRecorder, from time: Double) {
        state.withLock { s in
            s.movie = Movie(recorder: recorder)
            // The sound first: the recorder's lane writes the queued sound after each frame, and
            // a pre-roll's frames can all be written before a late submission of its sound.
            if recorder.hasAudio {
                for p in s.sound where p.time + 0.05 >= time { recorder.submit(audio: p) }
            }
            for u in s.ring where u.time >= time { submit(u, &s.movie!) }
        }
    }

    /// The movie ends with the first unit after `time`.
    func finish(at time: Double) { state.withLock { $0.movie?.stopAt = time } }

    /// Another event began: the movie goes on, if it is still being written (false: its
    /// post-roll had run out, and it was handed back to be finished).
    func keepRecording() -> Bool {
        state.withLock { s in
            guard s.movie != nil else { return false }
            s.movie!.stopAt = nil
            return true
        }
    }

    /// The recorder ended by itself (a full disk, a failure): it is fed no more.
    func drop(_ recorder: MovieRecorder) {
        state.withLock { s in if s.movie?.recorder === recorder { s.movie = nil } }
    }

    private func submit(_ u: AccessUnit, _ m: inout Movie) {
        if m.needKeyframe && !u.keyframe { return }
        m.needKeyframe = false
        if !m.recorder.submit(unit: u.bytes, time: u.time, keyframe: u.keyframe) {
            m.needKeyframe = true  // no room: the next GOP, whole
            hub.requestKeyframe()  // (the stream's encoder: the hub's)
        }
    }

    private func drain() {
        var done: [(MovieRecorder, RecordingEndReason)] = []
        state.withLock { s in
            guard !s.stopped else { return }
            while let units = s.units {
                switch units.next() {
                case .item(.start(_, let generation)):
                    // A new stream (a new format, a turn by 90°): the ring's units are another
                    // stream's, and a movie of them cannot go on.
                    s.ring = []
                    s.lastKeyframe = nil
                    s.generation = generation
                    if let m = s.movie { done.append((m.recorder, .formatChanged)); s.movie = nil }
                case .item(.unit(let u)):
                    s.ring.append(u)
                    if u.keyframe {
                        joinSound(&s)
                        s.lastKeyframe = u.time
                    } else if let k = s.lastKeyframe, u.time - k >= max(0.5, s.preRoll) {
                        units.requestKeyframe()
                    }
                    // Drop the oldest GOP once the next one alone reaches back far enough.
                    let keep = u.time - s.preRoll - Self.margin
                    while let next = s.ring.dropFirst().firstIndex(where: \.keyframe), s.ring[next].time <= keep {
                        s.ring.removeFirst(next)
                    }
                    if s.movie != nil {
                        if let stop = s.movie!.stopAt, u.time > stop {
                            done.append((s.movie!.recorder, .eventEnded))
                            s.movie = nil
                        } else {
                            submit(u, &s.movie!)
                        }
                    }
                case .end:
                    // The stream this client joined ended (a new encoder): join the new one.
                    s.ring = []
                    s.lastKeyframe = nil
                    s.generation = nil
                    if let m = s.movie { done.append((m.recorder, .formatChanged)); s.movie = nil }
                    units.cancel()
                    s.units = join()
                case .wait:
                    return
                }
            }
        }
        for (recorder, reason) in done { onDone(recorder, reason) }
    }
}
