// A client's recording, as the session offers it: one at a time per camera, started while the
// camera runs. The movie output runs it (MovieOutput: its file, its frames or the live
// stream's units, its sound); the session says when and why it ends — a stop, a prepare, a
// lost camera end the movie with their reason — publishes the events and announces the state.

import CameraCore
import Movie

extension CaptureSession {
    @discardableResult
    public func startRecording(_ options: RecordingOptions) throws(SessionError) -> SessionState {
        guard run.state == .running else { throw .notRunning }
        events.publish(.recording(try graph.movie.startRecording(options, orientation: settings.orientation)))
        return announce()
    }

    /// Ends the recording; the caller awaits the recorder's `outcome()` for the movie.
    public func stopRecording() throws(SessionError) -> MovieRecorder {
        guard let r = graph.movie.endRecording(.stopped) else { throw .notRecording }
        announce()
        return r
    }

    /// Adds the next captured frame to an `api`-triggered timelapse.
    @discardableResult
    public func addRecordingFrame() throws(SessionError) -> SessionState {
        try graph.movie.addFrame()
        return state()
    }

    /// Ends the recording with `reason` (the stream it records ends); no announcement.
    func endRecording(_ reason: RecordingEndReason) { graph.movie.endRecording(reason) }

    /// What the movie output finished since (a file, a post-roll, a restarted live stream).
    func movieCompleted(_ c: MovieOutput.Completion) {
        let (finished, changed) = graph.movie.handle(c)
        for e in finished { events.publish(.recording(e)) }
        if changed { announce() }
    }
}
