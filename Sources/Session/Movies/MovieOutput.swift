// The movie output (AVCaptureMovieFileOutput) as the graph holds it: added once, kept across
// runs, it runs its own policy — the recording a client starts (a MovieRecorder offered the
// run's frames, or fed the live stream's access units when it shares the live encode:
// LiveRecording) and the motion events' movies (MovieOutput+Events: the pre-roll ring on the
// live stream while motion recording is on and a run is under way). The session calls it on
// its queue and says why a recording ends (a stop, a prepare, a lost camera); it publishes
// what the output answers and announces the state. What finishes later (a file written, a
// post-roll reached, the live stream restarted) comes back through the session's queue as a
// `Completion`, so every decision here is taken on that one queue; the lock is for the frame
// path and the state's readers.

import CameraCore
import Logging
import Movie
import SystemSupport

final class MovieOutput: CaptureOutput {
    struct Movies {
        /// The recording a client started, and the live-stream client feeding it when it shares the live encode.
        var recording: (recorder: MovieRecorder, live: LiveRecording?, sound: SoundSubscription?)?
        /// The motion event's movie, and the pre-roll ring it comes from (while motion recording is on).
        var event: EventMovie?
        var ring: MotionRecording?
        /// The run under way (nil between runs): its camera and format.
        var run: CaptureRun?
    }
    let movies = Locked(Movies())
    /// Whether the session has a microphone: the output then takes sound too.
    let sound: Bool
    let configuration: SessionConfiguration
    let live: LiveHub
    let liveOutput: LiveOutput
    let motion: MotionOutput
    let microphones: [String: AudioInput]
    let logger: Logger
    /// Where later completions go: the session's queue (set once, by the session).
    private let completed = Locked<(@Sendable (Completion) -> Void)?>(nil)

    /// What ends after the call that began it, handed back on the session's queue.
    enum Completion: Sendable {
        /// A recorder finished its file (asked to, or by itself: a limit, a full disk).
        case recorded(RecordingOutcome)
        /// The event movie reached its post-roll, or its stream ended.
        case eventMovieDue(MovieRecorder, RecordingEndReason)
        /// The live stream a recording shared restarted (a new format, a turn by 90°).
        case liveRestarted(recording: String)
    }

    init(configuration: SessionConfiguration, live: LiveHub, liveOutput: LiveOutput, motion: MotionOutput,
         microphones: [String: AudioInput], logger: Logger) {
        sound = !microphones.isEmpty
        self.configuration = configuration
        self.live = live
        self.liveOutput = liveOutput
        self.motion = motion
        self.microphones = microphones
        self.logger = logger
    }

    /// `handler` takes each completion onto the session's queue.
    func onCompletion(_ handler: @escaping @Sendable (Completion) -> Void) { completed.withLock { $0 = handler } }

    func complete(_ c: Completion) { completed.withLock { $0 }?(c) }

    /// The recording a client started, if any.
    var recorder: MovieRecorder? { movies.withLock { $0.recording?.recorder } }

    /// The pre-roll the ring holds now (seconds; 0 while none runs).
    var preRollHeld: Double { movies.withLock { $0.ring }?.held ?? 0 }

    // MARK: - A client's recording

    /// Starts a recording of the run under way (none is): the recording's started event.
    /// `orientation` is the session's (a movie of frames records it as its display matrix).
    func startRecording(_ options: RecordingOptions, orientation: OrientationSetting) throws(SessionError) -> RecordingEvent {
        guard let run = movies.withLock({ $0.run }) else { throw .notRunning }
        guard recorder == nil else { throw .alreadyRecording }
        let shared = sharableLiveStream(options, format: run.format, orientation: orientation)
        var setup = MovieRecorder.Setup(
            id: configuration.movies.makeID(startedAt: Clock.now(), camera: run.camera), camera: run.camera,
            format: run.format, orientation: FrameTransform(rotation: orientation.rotation, mirrored: orientation.mirrored),
            options: options, preset: configuration.moviePreset, jpegQuality: configuration.captureQuality,
            encoded: shared.map { MovieRecorder.EncodedStream(extradata: $0.info.extradata, width: $0.info.width, height: $0.info.height) })
        // The sound as it is now: a microphone that is not running gives a mute movie.
        let stream = options.audio && options.timelapse == nil ? microphones[run.camera]?.aac : nil
        setup.audio = stream?.track
        let r: MovieRecorder
        do throws(MovieError) {
            r = try MovieRecorder(setup, store: configuration.movies, pool: configuration.pool) { [weak self] outcome in
                self?.complete(.recorded(outcome))
            }
        } catch {
            throw .recordingUnavailable(error)
        }
        let id = setup.id
        let feeder = shared.map { shared in
            LiveRecording(hub: live, generation: shared.generation, recorder: r) { [weak self] in
                self?.complete(.liveRestarted(recording: id))
            }
        }
        let soundFeed = stream.flatMap { stream in
            setup.audio.map { track in
                let sound = stream.subscribe(track)
                sound.deliver { r.submit(audio: $0) }  // the recorder's submit only queues
                return sound
            }
        }
        movies.withLock { $0.recording = (r, feeder, soundFeed) }
        feeder?.start()
        logger.info("camera \(run.camera) recording \(id) (\(options.codec.rawValue)\(shared == nil ? "" : ", the live encode shared"))")
        return RecordingEvent(camera: run.camera, event: .started, id: id)
    }

    /// Takes the recording off (all of it, or only the one with `id`) and asks it to finish:
    /// no more frames or units reach it. Its file comes as a `.recorded` completion.
    @discardableResult
    func endRecording(_ reason: RecordingEndReason, id: String? = nil) -> MovieRecorder? {
        guard let r = takeRecording(id: id) else { return nil }
        r.finish(reason)
        logger.info("camera \(r.setup.camera ?? "") recording \(r.id) ends: \(reason.rawValue)")
        return r
    }

    /// Adds the next captured frame to an `api`-triggered timelapse.
    func addFrame() throws(SessionError) {
        guard let r = recorder else { throw .notRecording }
        guard r.setup.options.timelapse?.trigger == .api else { throw .notAPITimelapse }
        r.requestFrame()
    }

    @discardableResult
    private func takeRecording(id: String? = nil) -> MovieRecorder? {
        let taken = movies.withLock { m -> (recorder: MovieRecorder, live: LiveRecording?, sound: SoundSubscription?)? in
            guard let r = m.recording, id == nil || r.recorder.id == id else { return nil }
            m.recording = nil
            return r
        }
        taken?.live?.stop()
        taken?.sound?.cancel()
        return taken?.recorder
    }

    /// The live stream a new H.264 recording can share, with its generation: live clients
    /// watch (so it is being encoded), its settings are the movie's (the same preset, no cap
    /// of its own beyond the default at its size, not a timelapse), and it is this format's
    /// stream (its size is the frames', turned as the orientation turns them).
    private func sharableLiveStream(_ options: RecordingOptions, format: VideoFormat,
                                    orientation: OrientationSetting) -> (info: LiveStreamInfo, generation: Int)? {
        guard options.codec == .h264, options.timelapse == nil, live.hasClients,
              configuration.live.preset == configuration.moviePreset, configuration.live.bitrate == nil,
              liveOutput.bitrateOverride == nil,
              let info = live.info, info.fps == format.fps else { return nil }
        let (w, h) = (format.width & ~1, format.height & ~1)
        let turned = orientation.rotation == 90 || orientation.rotation == 270
        guard (info.width, info.height) == (turned ? (h, w) : (w, h)) else { return nil }
        return (info, live.generation)
    }

    /// A completion, on the session's queue: the recording events to publish, and whether the
    /// state changed (to announce).
    func handle(_ c: Completion) -> (events: [RecordingEvent], changed: Bool) {
        switch c {
        case .recorded(let outcome):
            takeRecording(id: outcome.id)
            eventMovieEndedByItself(outcome.id)
            if let message = outcome.message { logger.warning("recording \(outcome.id) ended (\(outcome.reason.rawValue)): \(message)") }
            return ([RecordingEvent(camera: outcome.camera, event: .finished, id: outcome.id,
                                    reason: outcome.reason, movie: outcome.movie, message: outcome.message)], true)
        case .eventMovieDue(let recorder, let reason):
            eventMovieDone(recorder, reason)
            return ([], false)
        case .liveRestarted(let id):
            guard recorder?.id == id else { return ([], false) }
            endRecording(.formatChanged)
            return ([], true)
        }
    }

    // MARK: - CaptureOutput

    /// A run begins: the pre-roll ring runs with it when motion recording is on.
    func runStarted(_ run: CaptureRun) {
        movies.withLock { $0.run = run }
        updateRing()
    }

    /// The run ended: the event movie ends with the stream it records (the recording is the
    /// session's to end, with its reason, before).
    func runEnded() {
        movies.withLock { $0.run = nil }
        updateRing()
    }

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
