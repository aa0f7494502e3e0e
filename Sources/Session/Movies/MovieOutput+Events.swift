// The motion events' movies, the movie output's own policy (issue 28): while motion recording
// is on and a run is under way, the pre-roll ring (MotionRecording) keeps the live stream's
// last seconds; an event starts a movie from it, an event within the last one's post-roll
// extends it, and the movie ends a post-roll after the last event (the ring says when, as a
// `.eventMovieDue` completion) or with the run. Called on the session's queue, as the rest.

import CameraCore
import Motion
import Movie
import SystemSupport

extension MovieOutput {
    /// Runs the pre-roll ring when motion recording is on and a run is under way, else ends it
    /// (and the event movie it feeds). The motion settings may have changed: its pre-roll too.
    func updateRing() {
        let settings = motion.settings
        let (ring, running) = movies.withLock { ($0.ring, $0.run != nil) }
        let wanted = settings.enabled && settings.record && running
        if let ring { ring.setPreRoll(settings.preRoll) }
        if wanted, ring == nil {
            let microphones = self.microphones
            let made = MotionRecording(hub: live, preRoll: settings.preRoll, sound: {
                // The session's microphone that runs (the camera's own), in AAC.
                guard let stream = microphones.values.map(\.aac).first(where: { $0.track != nil }), let track = stream.track
                else { return nil }
                return stream.subscribe(track)
            }) { [weak self] recorder, reason in
                self?.complete(.eventMovieDue(recorder, reason))
            }
            movies.withLock { $0.ring = made }
            made.start()
        } else if !wanted, let ring {
            movies.withLock { $0.ring = nil }
            if let recorder = ring.stop() { eventMovieDone(recorder, .stopped) }
        }
    }

    /// An event started or ended (from the motion output): the recording's started event
    /// when it began a movie.
    func motion(_ e: MotionEvent) -> RecordingEvent? {
        let (current, ring) = movies.withLock { ($0.event, $0.ring) }
        switch e.event {
        case .moving:
            return nil
        case .started:
            if var movie = current, ring?.keepRecording() == true {  // within the post-roll of the last: one movie
                movie.event.end = max(movie.event.end, e.start)
                movies.withLock { $0.event = movie }
                return nil
            }
            // A movie whose post-roll ran out a moment ago (its end is on its way here) is
            // finished now; this event gets a movie of its own.
            if let movie = current { eventMovieDone(movie.recorder, .eventEnded) }
            return startEventMovie(e)
        case .ended:
            guard var movie = current else { return nil }
            movie.event.end = e.end ?? e.at
            if let peak = e.peak, peak.score > movie.peakScore { movie.peakScore = peak.score; movie.event.peak = peak.at }
            movies.withLock { $0.event = movie }
            movie.recorder.annotate(event: movie.event, snapshot: false)
            ring?.finish(at: movie.event.end + motion.settings.postRoll)
            return nil
        }
    }

    private func startEventMovie(_ e: MotionEvent) -> RecordingEvent? {
        let (ring, run) = movies.withLock { ($0.ring, $0.run) }
        guard let ring, let run, let first = ring.firstFrame(for: e.start) else {
            if ring != nil { logger.warning("motion event at \(e.start): no live stream to record yet") }
            return nil
        }
        let preRoll = motion.settings.preRoll
        var setup = MovieRecorder.Setup(
            id: configuration.movies.makeID(startedAt: first.time, camera: run.camera), camera: run.camera, format: run.format,
            orientation: .identity, options: RecordingOptions(codec: .h264), preset: configuration.live.preset,
            jpegQuality: configuration.captureQuality,
            encoded: MovieRecorder.EncodedStream(extradata: first.info.extradata, width: first.info.width, height: first.info.height),
            trigger: .motion, startedAt: first.time)
        // The ring goes over at once: room for all of it (the pre-roll, a GOP, the margin) and a second more.
        setup.unitBacklog = Int((e.start - first.time + max(0.5, preRoll) + MotionRecording.margin + 2) * Double(max(1, first.info.fps)))
        // The pre-roll's sound as it is kept (a microphone that is not running: a mute movie).
        if let track = ring.soundTrack {
            setup.audio = track
            setup.soundBacklog = Int((ring.soundSeconds + 10) * Double(track.sampleRate) / 1024) + 1
        }
        let recorder: MovieRecorder
        do throws(MovieError) {
            recorder = try MovieRecorder(setup, store: configuration.movies, pool: configuration.pool) { [weak self] outcome in
                self?.complete(.recorded(outcome))
            }
        } catch {
            logger.warning("motion event at \(e.start): no movie (\(error))")
            return nil
        }
        let event = MovieEvent(start: e.start, peak: e.start, end: e.start)
        movies.withLock { $0.event = EventMovie(recorder: recorder, event: event, peakScore: e.score) }
        recorder.annotate(event: event, snapshot: false)
        ring.record(into: recorder, from: first.time)
        logger.info("camera \(run.camera) motion at \(e.start): recording \(setup.id) from \(String(format: "%.2f", e.start - first.time)) s before")
        return RecordingEvent(camera: run.camera, event: .started, id: setup.id)
    }

    /// Ends the event movie being written now (the server stops); the caller may await its file.
    func endEventMovie() -> MovieRecorder? {
        let (movie, ring) = movies.withLock { m in
            defer { if m.event != nil { m.ring = nil } }
            return (m.event, m.ring)
        }
        guard let movie else { return nil }
        _ = ring?.stop()
        eventMovieDone(movie.recorder, .stopped)
        return movie.recorder
    }

    /// The event movie reached its post-roll (or its stream ended): its snapshot is stored
    /// beside it, and it is finished.
    func eventMovieDone(_ recorder: MovieRecorder, _ reason: RecordingEndReason) {
        let movie = movies.withLock { m -> EventMovie? in
            guard let movie = m.event, movie.recorder === recorder else { return nil }
            m.event = nil
            return movie
        }
        guard let movie else { return recorder.finish(reason) }
        var stored = false
        if let snapshot = motion.takeSnapshot() {
            stored = configuration.movies.writeSnapshot(recorder.id, jpeg: snapshot.jpeg)
        }
        recorder.annotate(event: movie.event, snapshot: stored)
        recorder.finish(reason)
    }

    /// A recorder that finished by itself (a full disk): if it was the event movie's, the ring
    /// stops feeding it.
    func eventMovieEndedByItself(_ id: String) {
        let (movie, ring) = movies.withLock { m -> (EventMovie?, MotionRecording?) in
            guard let movie = m.event, movie.recorder.id == id else { return (nil, nil) }
            m.event = nil
            return (movie, m.ring)
        }
        if let movie { ring?.drop(movie.recorder) }
    }
}
