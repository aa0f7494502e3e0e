// The motion output on the session (issue 28): its settings (kept across starts, stops and
// switches, as the metadata output's are), its events, and the event movies. The detector
// runs on the frame path (MotionOutput); what it finds comes here as `motion` events, which
// are published and start, extend or end the event's movie (MotionRecording: the pre-roll
// ring on the live stream).

import CameraCore
import Foundation
import Motion
import Movie
import SystemSupport

/// A change to the motion settings: each field that is set replaces the current one.
public struct MotionChange: Sendable, Equatable {
    public var enabled: Bool?
    public var threshold: Double?
    public var masks: [MotionPolygon]?
    public var preRoll: Double?
    public var postRoll: Double?
    public var record: Bool?

    public init(enabled: Bool? = nil, threshold: Double? = nil, masks: [MotionPolygon]? = nil, preRoll: Double? = nil,
                postRoll: Double? = nil, record: Bool? = nil) {
        self.enabled = enabled
        self.threshold = threshold
        self.masks = masks
        self.preRoll = preRoll
        self.postRoll = postRoll
        self.record = record
    }

    public func applied(to s: MotionSettings) -> MotionSettings {
        var n = s
        if let enabled { n.enabled = enabled }
        if let threshold { n.threshold = threshold }
        if let masks { n.masks = masks }
        if let preRoll { n.preRoll = preRoll }
        if let postRoll { n.postRoll = postRoll }
        if let record { n.record = record }
        return n
    }
}

/// The event movie being written: its recorder and its event (merged events: the first's
/// start, the highest peak, the last's end).
struct EventMovie {
    var recorder: MovieRecorder
    var event: MovieEvent
    var peakScore: Double
}

extension CaptureSession {
    /// Changes the motion settings (all or nothing: a bad field changes none).
    @discardableResult
    public func setMotion(_ change: MotionChange) throws(SessionError) -> SessionState {
        let new = change.applied(to: motionSettings)
        if let (field, message) = new.problem { throw .invalidValue("\(field): \(message)") }
        motionSettings = new
        pipeline?.output(MotionOutput.self)?.configure(new)
        motionRecording?.setPreRoll(new.preRoll)
        updateMotionRecording()
        return announce()
    }

    /// The motion output of a launch.
    func makeMotionOutput(camera id: String) -> MotionOutput {
        MotionOutput(camera: id, settings: motionSettings, figures: motionFigures, pool: configuration.pool) { [weak self] event in
            Task { await self?.motionEvent(event) }
        }
    }

    var motionState: MotionState {
        pipeline?.output(MotionOutput.self)?.state ?? MotionState.off(motionSettings)
    }

    /// The detector's figures since the server started (for /metrics).
    public nonisolated var motionTotals: MotionFigures {
        // The buckets copied element by element under the lock: a copy of the array would share
        // its buffer, and the capture thread counts into it (ThreadSanitizer saw the reader
        // iterate storage the writer was changing).
        motionFigures.withLock { f in
            var copy = f
            copy.scoreBuckets = f.scoreBuckets.map { $0 }
            return copy
        }
    }

    /// Starts or stops the pre-roll ring: it runs while motion recording is on and the camera runs.
    func updateMotionRecording() {
        let wanted = motionSettings.enabled && motionSettings.record && runState == .running
        if wanted, motionRecording == nil {
            let ring = MotionRecording(hub: live, preRoll: motionSettings.preRoll) { [weak self] recorder, reason in
                Task { await self?.eventMovieDone(recorder, reason) }
            }
            motionRecording = ring
            ring.start()
        } else if !wanted, let ring = motionRecording {
            motionRecording = nil
            if let recorder = ring.stop() { eventMovieDone(recorder, .stopped) }
        }
    }

    /// An event started, moved or ended (from the motion output).
    func motionEvent(_ e: MotionEvent) {
        events.publish(.motion(e))
        switch e.event {
        case .moving:
            return  // where it moves: for viewers; the state changes only at the start and end
        case .started:
            if var movie = eventMovie, motionRecording?.keepRecording() == true {  // within the post-roll of the last: one movie
                movie.event.end = max(movie.event.end, e.start)
                eventMovie = movie
            } else {
                // A movie whose post-roll ran out a moment ago (its end is on its way here) is
                // finished now; this event gets a movie of its own.
                if let movie = eventMovie { eventMovieDone(movie.recorder, .eventEnded) }
                startEventMovie(e)
            }
        case .ended:
            guard var movie = eventMovie else { break }
            movie.event.end = e.end ?? e.at
            if let peak = e.peak, peak.score > movie.peakScore { movie.peakScore = peak.score; movie.event.peak = peak.at }
            eventMovie = movie
            movie.recorder.annotate(event: movie.event, snapshot: false)
            motionRecording?.finish(at: movie.event.end + motionSettings.postRoll)
        }
        announce()
    }

    private func startEventMovie(_ e: MotionEvent) {
        guard let ring = motionRecording, runState == .running, let first = ring.firstFrame(for: e.start) else {
            if motionRecording != nil { logger.warning("motion event at \(e.start): no live stream to record yet") }
            return
        }
        let cameraID = camera.descriptor.id
        var setup = MovieRecorder.Setup(
            id: configuration.movies.makeID(startedAt: first.time, camera: cameraID), camera: cameraID, format: format,
            orientation: .identity, options: RecordingOptions(codec: .h264), preset: configuration.live.preset,
            jpegQuality: configuration.captureQuality,
            encoded: MovieRecorder.EncodedStream(extradata: first.info.extradata, width: first.info.width, height: first.info.height),
            trigger: .motion, startedAt: first.time)
        // The ring goes over at once: room for all of it (the pre-roll, a GOP, the margin) and a second more.
        setup.unitBacklog = Int((e.start - first.time + max(0.5, motionSettings.preRoll) + MotionRecording.margin + 2)
                                * Double(max(1, first.info.fps)))
        let recorder: MovieRecorder
        do throws(MovieError) {
            recorder = try MovieRecorder(setup, store: configuration.movies, pool: configuration.pool) { [weak self] outcome in
                Task { await self?.recordingEnded(outcome) }
            }
        } catch {
            logger.warning("motion event at \(e.start): no movie (\(error))")
            return
        }
        let event = MovieEvent(start: e.start, peak: e.start, end: e.start)
        eventMovie = EventMovie(recorder: recorder, event: event, peakScore: e.score)
        recorder.annotate(event: event, snapshot: false)
        ring.record(into: recorder, from: first.time)
        logger.info("camera \(cameraID) motion at \(e.start): recording \(setup.id) from \(String(format: "%.2f", e.start - first.time)) s before")
        events.publish(.recording(RecordingEvent(camera: cameraID, event: .started, id: setup.id)))
    }

    /// Ends the event movie being written now (the server stops); the caller may await its file.
    public func endEventMovie() -> MovieRecorder? {
        guard let movie = eventMovie else { return nil }
        _ = motionRecording?.stop()
        motionRecording = nil
        eventMovieDone(movie.recorder, .stopped)
        return movie.recorder
    }

    /// The event movie reached its post-roll (or its stream ended): its snapshot is stored
    /// beside it, and it is finished.
    func eventMovieDone(_ recorder: MovieRecorder, _ reason: RecordingEndReason) {
        guard let movie = eventMovie, movie.recorder === recorder else { recorder.finish(reason); return }
        eventMovie = nil
        var stored = false
        if let snapshot = pipeline?.output(MotionOutput.self)?.takeSnapshot() {
            stored = configuration.movies.writeSnapshot(recorder.id, jpeg: snapshot.jpeg)
        }
        recorder.annotate(event: movie.event, snapshot: stored)
        recorder.finish(reason)
    }
}
