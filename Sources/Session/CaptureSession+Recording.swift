// The movie output on the session: one recording at a time per camera. Starting creates
// the file and attaches the recorder to the running pipeline; anything that ends the
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
        guard runState == .running, let pipeline else { throw .notRunning }
        guard recorder == nil else { throw .alreadyRecording }
        let cameraID = camera.descriptor.id
        let shared = sharableLiveStream(options)
        let setup = MovieRecorder.Setup(
            id: configuration.movies.makeID(startedAt: Clock.now(), camera: cameraID), camera: cameraID,
            format: format,
            orientation: FrameTransform(rotation: settings.orientation.rotation, mirrored: settings.orientation.mirrored),
            options: options, preset: configuration.moviePreset, jpegQuality: configuration.captureQuality,
            encoded: shared.map { MovieRecorder.EncodedStream(extradata: $0.info.extradata, width: $0.info.width, height: $0.info.height) })
        let r: MovieRecorder
        do throws(MovieError) {
            r = try MovieRecorder(setup, store: configuration.movies, pool: configuration.pool) { [weak self] outcome in
                Task { await self?.recordingEnded(outcome) }
            }
        } catch {
            throw .recordingUnavailable(error)
        }
        recorder = r
        if let shared {
            let id = setup.id
            let feed = LiveRecording(hub: live, generation: shared.generation, recorder: r) { [weak self] in
                Task { await self?.liveStreamRestarted(recording: id) }
            }
            liveRecording = feed
            feed.start()
        } else {
            pipeline.attach(r)
        }
        logger.info("camera \(cameraID) recording \(setup.id) (\(options.codec.rawValue)\(shared == nil ? "" : ", the live encode shared"))")
        events.publish(.recording(RecordingEvent(camera: cameraID, event: .started, id: setup.id)))
        return announce()
    }

    /// Ends the recording; the caller awaits the recorder's `outcome()` for the movie.
    public func stopRecording() throws(SessionError) -> MovieRecorder {
        guard let r = recorder else { throw .notRecording }
        endRecording(.stopped)
        announce()
        return r
    }

    /// Adds the next captured frame to an `api`-triggered timelapse.
    @discardableResult
    public func addRecordingFrame() throws(SessionError) -> SessionState {
        guard let r = recorder else { throw .notRecording }
        guard r.setup.options.timelapse?.trigger == .api else { throw .notAPITimelapse }
        r.requestFrame()
        return state()
    }

    /// The live stream a new H.264 recording can share, with its generation: live clients
    /// watch (so it is being encoded), its settings are the movie's (the same preset, constant
    /// quality, not a timelapse), and it is this format's stream (its size is the frames',
    /// turned as the orientation turns them).
    private func sharableLiveStream(_ options: RecordingOptions) -> (info: LiveStreamInfo, generation: Int)? {
        guard options.codec == .h264, options.timelapse == nil, live.hasClients,
              configuration.live.preset == configuration.moviePreset, configuration.live.bitrate == nil,
              let info = live.info, info.fps == format.fps else { return nil }
        let (w, h) = (format.width & ~1, format.height & ~1)
        let turned = settings.orientation.rotation == 90 || settings.orientation.rotation == 270
        guard (info.width, info.height) == (turned ? (h, w) : (w, h)) else { return nil }
        return (info, live.generation)
    }

    /// The live stream a recording shared restarted (a new format, a turn by 90°): its movie ends.
    func liveStreamRestarted(recording id: String) {
        guard recorder?.id == id else { return }
        endRecording(.formatChanged)
        announce()
    }

    /// Detaches the recorder and asks it to finish; no suspension, no announcement.
    func endRecording(_ reason: RecordingEndReason) {
        guard let r = recorder else { return }
        recorder = nil
        liveRecording?.stop()
        liveRecording = nil
        pipeline?.detach(r)
        r.finish(reason)
        logger.info("camera \(camera.descriptor.id) recording \(r.id) ends: \(reason.rawValue)")
    }

    /// The recorder finished the file (asked to, or by itself: a limit, a full disk).
    func recordingEnded(_ outcome: RecordingOutcome) {
        if let r = recorder, r.id == outcome.id {
            recorder = nil
            liveRecording?.stop()
            liveRecording = nil
            pipeline?.detach(r)
        }
        if let movie = eventMovie, movie.recorder.id == outcome.id {  // an event movie that ended by itself (a full disk)
            eventMovie = nil
            motionRecording?.drop(movie.recorder)
        }
        if let message = outcome.message { logger.warning("recording \(outcome.id) ended (\(outcome.reason.rawValue)): \(message)") }
        events.publish(.recording(RecordingEvent(camera: outcome.camera, event: .finished, id: outcome.id,
                                                 reason: outcome.reason, movie: outcome.movie, message: outcome.message)))
        announce()
    }
}
