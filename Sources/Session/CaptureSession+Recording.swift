// The movie output on the session: one recording at a time per camera. Starting creates
// the file and attaches the recorder to the running pipeline; anything that ends the
// camera's stream as it was — stop, prepare, switch, device loss — ends the movie with its
// reason (the new format is not recorded until the next start). The recorder finishes the
// file on its own thread; `recordingEnded` announces it however it ended.

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
        let setup = MovieRecorder.Setup(
            id: configuration.movies.makeID(startedAt: Clock.now(), camera: cameraID), camera: cameraID,
            format: format,
            orientation: FrameTransform(rotation: settings.orientation.rotation, mirrored: settings.orientation.mirrored),
            options: options, preset: configuration.moviePreset, jpegQuality: configuration.captureQuality)
        let r: MovieRecorder
        do throws(MovieError) {
            r = try MovieRecorder(setup, store: configuration.movies) { [weak self] outcome in
                Task { await self?.recordingEnded(outcome) }
            }
        } catch {
            throw .recordingUnavailable(error)
        }
        recorder = r
        pipeline.attach(r)
        logger.info("camera \(cameraID) recording \(setup.id) (\(options.codec.rawValue))")
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

    /// Detaches the recorder and asks it to finish; no suspension, no announcement.
    func endRecording(_ reason: RecordingEndReason) {
        guard let r = recorder else { return }
        recorder = nil
        pipeline?.detach(r)
        r.finish(reason)
        logger.info("camera \(camera.descriptor.id) recording \(r.id) ends: \(reason.rawValue)")
    }

    /// The recorder's thread finished the file (asked to, or by itself: a limit, a full disk).
    func recordingEnded(_ outcome: RecordingOutcome) {
        if let r = recorder, r.id == outcome.id {
            recorder = nil
            pipeline?.detach(r)
        }
        if let message = outcome.message { logger.warning("recording \(outcome.id) ended (\(outcome.reason.rawValue)): \(message)") }
        events.publish(.recording(RecordingEvent(camera: outcome.camera, event: .finished, id: outcome.id,
                                                 reason: outcome.reason, movie: outcome.movie, message: outcome.message)))
        announce()
    }
}
