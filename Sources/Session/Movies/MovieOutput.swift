// The movie output (AVCaptureMovieFileOutput) as the graph holds it: added once, kept across
// runs, it holds the recording under way — a MovieRecorder offered the run's frames, or fed
// the live stream's access units when it shares the live encode (LiveRecording) — and the
// motion event's movie being written from the pre-roll ring. Which recording starts and ends
// when is the session's call (CaptureSession+Recording, +Motion); what is recording is here.

import CameraCore
import Movie
import SystemSupport

final class MovieOutput: CaptureOutput {
    private struct Movies {
        /// The recording a client started, and the live-stream client feeding it when it shares the live encode.
        var recording: (recorder: MovieRecorder, live: LiveRecording?, sound: SoundFeed?)?
        /// The motion event's movie, and the pre-roll ring it comes from (while motion recording is on).
        var event: EventMovie?
        var ring: MotionRecording?
    }
    private let movies = Locked(Movies())
    /// Whether the session has a microphone: the output then takes sound too.
    let sound: Bool

    init(sound: Bool) { self.sound = sound }

    /// A recording's subscription to its camera's AAC encode.
    struct SoundFeed: Sendable {
        var stream: AudioEncodeStream
        var id: Int
    }

    /// The recording a client started, if any.
    var recorder: MovieRecorder? { movies.withLock { $0.recording?.recorder } }

    /// Starts a recording (none is under way): `live` feeds it when it shares the live encode,
    /// else it is offered the run's frames from the next one on.
    func begin(_ recorder: MovieRecorder, live: LiveRecording?, sound: AudioEncodeStream?) {
        let feed = sound.flatMap { stream in
            recorder.setup.audio.map { track in SoundFeed(stream: stream, id: stream.subscribe(track) { recorder.submit(audio: $0) }) }
        }
        movies.withLock { $0.recording = (recorder, live, feed) }
        live?.start()
    }

    /// Takes the recording off (all of it, or only the one with `id`): no more frames or
    /// units reach it. The caller finishes it.
    @discardableResult
    func end(id: String? = nil) -> MovieRecorder? {
        let taken = movies.withLock { m -> (recorder: MovieRecorder, live: LiveRecording?, sound: SoundFeed?)? in
            guard let r = m.recording, id == nil || r.recorder.id == id else { return nil }
            m.recording = nil
            return r
        }
        taken?.live?.stop()
        if let feed = taken?.sound { feed.stream.unsubscribe(feed.id) }
        return taken?.recorder
    }

    /// The motion event's movie being written.
    var eventMovie: EventMovie? {
        get { movies.withLock { $0.event } }
        set { movies.withLock { $0.event = newValue } }
    }

    /// The pre-roll ring on the live stream, while motion recording is on and the camera runs.
    var motionRing: MotionRecording? {
        get { movies.withLock { $0.ring } }
        set { movies.withLock { $0.ring = newValue } }
    }

    // MARK: - CaptureOutput

    /// A recording of frames wants them as its recorder says (a timelapse: when due).
    func wants(_ frame: borrowing RawFrame, now: Double) -> Bool {
        guard let r = movies.withLock({ $0.recording }), r.live == nil else { return false }
        return r.recorder.wants(frame, now: now)
    }

    func take(_ frame: borrowing RawFrame, _ context: FrameContext) {
        movies.withLock { $0.recording?.recorder }?.take(frame, context)
    }

    /// The recording's own report, or the event movie's: whichever is being written.
    var kind: OutputKind { .movie }

    var mediaTypes: [MediaType] { sound ? [.video, .audio] : [.video] }

    var report: OutputReport {
        let m = movies.withLock { ($0.recording?.recorder, $0.event?.recorder) }
        return (m.0 ?? m.1)?.report ?? OutputReport(type: .movie, active: false)
    }
}

/// The event movie being written: its recorder and its event (merged events: the first's
/// start, the highest peak, the last's end).
struct EventMovie: Sendable {
    var recorder: MovieRecorder
    var event: MovieEvent
    var peakScore: Double
}
