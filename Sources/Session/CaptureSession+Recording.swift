// The movie output on the session: one recording at a time per camera. Starting creates
// the file and hands the recorder to the graph's movie output; anything that ends the
// camera's stream as it was — stop, prepare, switch, device loss — ends the movie with its
// reason (the new format is not recorded until the next start). The recorder finishes the
// file on the shared pool; `recordingEnded` announces it however it ended.

import CameraCore
import Foundation
import Movie
import SystemSupport

extension CaptureSession {
    @discardableResult
    public func startRecording(_ options: RecordingOptions) throws(SessionError) -> SessionState {
        guard run.state == .running else { throw .notRunning }
        guard graph.movie.recorder == nil else { throw .alreadyRecording }
        let cameraID = camera.descriptor.id
        let shared = sharableLiveStream(options)
        var setup = MovieRecorder.Setup(
            id: configuration.movies.makeID(startedAt: Clock.now(), camera: cameraID), camera: cameraID,
            format: format,
            orientation: FrameTransform(rotation: settings.orientation.rotation, mirrored: settings.orientation.mirrored),
            options: options, preset: configuration.moviePreset, jpegQuality: configuration.captureQuality,
            encoded: shared.map { MovieRecorder.EncodedStream(extradata: $0.info.extradata, width: $0.info.width, height: $0.info.height) })
        // The sound as it is now: a microphone that is not running gives a mute movie.
        let sound = options.audio && options.timelapse == nil ? graph.microphones[cameraID]?.aac : nil
        setup.audio = sound?.track
        let r: MovieRecorder
        do throws(MovieError) {
            r = try MovieRecorder(setup, store: configuration.movies, pool: configuration.pool) { [weak self] outcome in
                Task { await self?.recordingEnded(outcome) }
            }
        } catch {
            throw .recordingUnavailable(error)
        }
        let id = setup.id
        graph.movie.begin(r, live: shared.map { shared in
            LiveRecording(hub: live, generation: shared.generation, recorder: r) { [weak self] in
                Task { await self?.liveStreamRestarted(recording: id) }
            }
        }, sound: sound)
        logger.info("camera \(cameraID) recording \(setup.id) (\(options.codec.rawValue)\(shared == nil ? "" : ", the live encode shared"))")
        events.publish(.recording(RecordingEvent(camera: cameraID, event: .started, id: setup.id)))
        return announce()
    }

    /// Ends the recording; the caller awaits the recorder's `outcome()` for the movie.
    public func stopRecording() throws(SessionError) -> MovieRecorder {
        guard let r = graph.movie.recorder else { throw .notRecording }
        endRecording(.stopped)
        announce()
        return r
    }

    /// Adds the next captured frame to an `api`-triggered timelapse.
    @discardableResult
    public func addRecordingFrame() throws(SessionError) -> SessionState {
        guard let r = graph.movie.recorder else { throw .notRecording }
        guard r.setup.options.timelapse?.trigger == .api else { throw .notAPITimelapse }
        r.requestFrame()
        return state()
    }

    /// The live stream a new H.264 recording can share, with its generation: live clients
    /// watch (so it is being encoded), its settings are the movie's (the same preset, no cap
    /// of its own beyond the default at its size, not a timelapse), and it is this format's stream (its size is the frames',
    /// turned as the orientation turns them).
    private func sharableLiveStream(_ options: RecordingOptions) -> (info: LiveStreamInfo, generation: Int)? {
        guard options.codec == .h264, options.timelapse == nil, live.hasClients,
              configuration.live.preset == configuration.moviePreset, configuration.live.bitrate == nil,
              graph.liveOutput.bitrateOverride == nil,
              let info = live.info, info.fps == format.fps else { return nil }
        let (w, h) = (format.width & ~1, format.height & ~1)
        let turned = settings.orientation.rotation == 90 || settings.orientation.rotation == 270
        guard (info.width, info.height) == (turned ? (h, w) : (w, h)) else { return nil }
        return (info, live.generation)
    }

    /// The live stream a recording shared restarted (a new format, a turn by 90°): its movie ends.
    func liveStreamRestarted(recording id: String) {
        guard graph.movie.recorder?.id == id else { return }
        endRecording(.formatChanged)
        announce()
    }

    /// Takes the recorder off the movie output and asks it to finish; no suspension, no announcement.
    func endRecording(_ reason: RecordingEndReason) {
        guard let r = graph.movie.end() else { return }
        r.finish(reason)
        logger.info("camera \(camera.descriptor.id) recording \(r.id) ends: \(reason.rawValue)")
    }

    /// The recorder finished the file (asked to, or by itself: a limit, a full disk).
    func recordingEnded(_ outcome: RecordingOutcome) {
        graph.movie.end(id: outcome.id)
        if let movie = graph.movie.eventMovie, movie.recorder.id == outcome.id {  // an event movie that ended by itself (a full disk)
            graph.movie.eventMovie = nil
            graph.movie.motionRing?.drop(movie.recorder)
        }
        if let message = outcome.message { logger.warning("recording \(outcome.id) ended (\(outcome.reason.rawValue)): \(message)") }
        events.publish(.recording(RecordingEvent(camera: outcome.camera, event: .finished, id: outcome.id,
                                                 reason: outcome.reason, movie: outcome.movie, message: outcome.message)))
        announce()
    }
}
