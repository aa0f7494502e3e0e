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

extension CaptureSession {
    /// Changes the motion settings (all or nothing: a bad field changes none).
    @discardableResult
    public func setMotion(_ change: MotionChange) throws(SessionError) -> SessionState {
        let new = change.applied(to: graph.motion.settings)
        if let (field, message) = new.problem { throw .invalidValue("\(field): \(message)") }
        graph.motion.configure(new)
        graph.movie.motionRing?.setPreRoll(new.preRoll)
        updateMotionRecording()
        return announce()
    }

    /// The detector's figures since the server started (for /metrics).
    public nonisolated var motionTotals: MotionFigures {
        // The buckets copied element by element under the lock: a copy of the array would share
        // its buffer, and the capture thread counts into it (ThreadSanitizer saw the reader
        // iterate storage the writer was changing).
        graph.motion.figures.withLock { f in
            var copy = f
            copy.scoreBuckets = f.scoreBuckets.map { $0 }
            return copy
        }
    }

    /// Starts or stops the pre-roll ring: it runs while motion recording is on and the camera runs.
    func updateMotionRecording() {
        let wanted = graph.motion.settings.enabled && graph.motion.settings.record && run.state == .running
        if wanted, graph.movie.motionRing == nil {
            let ring = MotionRecording(hub: live, preRoll: graph.motion.settings.preRoll, sound: { [weak self] deliver in
                guard let self, let track = self.soundTrack(.aac), let feed = self.subscribeSound(track, deliver) else { return nil }
                return (track, feed)
            }) { [weak self] recorder, reason in
                Task { await self?.eventMovieDone(recorder, reason) }
            }
            graph.movie.motionRing = ring
            ring.start()
        } else if !wanted, let ring = graph.movie.motionRing {
            graph.movie.motionRing = nil
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
            if var movie = graph.movie.eventMovie, graph.movie.motionRing?.keepRecording() == true {  // within the post-roll of the last: one movie
                movie.event.end = max(movie.event.end, e.start)
                graph.movie.eventMovie = movie
            } else {
                // A movie whose post-roll ran out a moment ago (its end is on its way here) is
                // finished now; this event gets a movie of its own.
                if let movie = graph.movie.eventMovie { eventMovieDone(movie.recorder, .eventEnded) }
                startEventMovie(e)
            }
        case .ended:
            guard var movie = graph.movie.eventMovie else { break }
            movie.event.end = e.end ?? e.at
            if let peak = e.peak, peak.score > movie.peakScore { movie.peakScore = peak.score; movie.event.peak = peak.at }
            graph.movie.eventMovie = movie
            movie.recorder.annotate(event: movie.event, snapshot: false)
            graph.movie.motionRing?.finish(at: movie.event.end + graph.motion.settings.postRoll)
        }
        announce()
    }

    private func startEventMovie(_ e: MotionEvent) {
        guard let ring = graph.movie.motionRing, run.state == .running, let first = ring.firstFrame(for: e.start) else {
            if graph.movie.motionRing != nil { logger.warning("motion event at \(e.start): no live stream to record yet") }
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
        setup.unitBacklog = Int((e.start - first.time + max(0.5, graph.motion.settings.preRoll) + MotionRecording.margin + 2)
                                * Double(max(1, first.info.fps)))
        // The pre-roll's sound as it is kept (a microphone that is not running: a mute movie).
        if let track = ring.soundTrack {
            setup.audio = track
            setup.soundBacklog = Int((ring.soundSeconds + 10) * Double(track.sampleRate) / 1024) + 1
        }
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
        graph.movie.eventMovie = EventMovie(recorder: recorder, event: event, peakScore: e.score)
        recorder.annotate(event: event, snapshot: false)
        ring.record(into: recorder, from: first.time)
        logger.info("camera \(cameraID) motion at \(e.start): recording \(setup.id) from \(String(format: "%.2f", e.start - first.time)) s before")
        events.publish(.recording(RecordingEvent(camera: cameraID, event: .started, id: setup.id)))
    }

    /// Ends the event movie being written now (the server stops); the caller may await its file.
    public func endEventMovie() -> MovieRecorder? {
        guard let movie = graph.movie.eventMovie else { return nil }
        _ = graph.movie.motionRing?.stop()
        graph.movie.motionRing = nil
        eventMovieDone(movie.recorder, .stopped)
        return movie.recorder
    }

    /// The event movie reached its post-roll (or its stream ended): its snapshot is stored
    /// beside it, and it is finished.
    func eventMovieDone(_ recorder: MovieRecorder, _ reason: RecordingEndReason) {
        guard let movie = graph.movie.eventMovie, movie.recorder === recorder else { recorder.finish(reason); return }
        graph.movie.eventMovie = nil
        var stored = false
        if let snapshot = graph.motion.takeSnapshot() {
            stored = configuration.movies.writeSnapshot(recorder.id, jpeg: snapshot.jpeg)
        }
        recorder.annotate(event: movie.event, snapshot: stored)
        recorder.finish(reason)
    }
}
