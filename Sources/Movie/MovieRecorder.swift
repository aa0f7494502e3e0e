// The movie output (AVCaptureMovieFileOutput): a CaptureOutput that wants every frame while
// recording (a timelapse: the frames it is due). Frames go through a FrameHandoff queue of
// `queueLimit` (never blocking the capture thread: a full queue drops the frame and counts
// it) to the recorder's lane of the shared pool (one slot), which converts, encodes and writes them.
// The movie's clock is the frames' capture time, so it lasts as long as the recording did
// even when frames were dropped; a timelapse's is its frame count at its own rate.

import CameraCore
import CFFmpeg
import Foundation
import JPEG
import SystemSupport

public final class MovieRecorder: CaptureOutput {
    public struct Setup: Sendable {
        public var id: String
        public var camera: String?
        public var format: VideoFormat
        /// Rotation and mirroring are fixed when the recording starts (the file's display
        /// matrix); the digital zoom follows each frame.
        public var orientation: FrameTransform
        public var options: RecordingOptions
        /// libx264's preset.
        public var preset: String
        /// JPEG quality for a raw camera's frames in an MJPEG movie.
        public var jpegQuality: Int
        /// H.264 encoded already (the live stream, shared): the recorder then takes access
        /// units (`submit(unit:)`), not frames, and encodes nothing.
        public var encoded: EncodedStream?
        /// What started it (a motion event's movie says so in its record).
        public var trigger: MovieTrigger
        /// The movie's first frame's capture time, when it is in the past (a motion event's
        /// pre-roll); nil: now.
        public var startedAt: Double?
        /// Access units that may wait for the file (a shared stream's): a motion movie hands
        /// its whole pre-roll over at once. nil: `unitQueueLimit`.
        public var unitBacklog: Int?
        /// Sound packets the recorder holds before it writes them (default `audioBacklog`,
        /// ten seconds of AAC at 48 kHz): a motion movie's pre-roll comes all at once.
        public var soundBacklog: Int?
        /// The sound track's description: the movie then takes AAC packets (`submit(audio:)`)
        /// beside its frames. Ignored for a timelapse (its time is not the capture's).
        public var audio: AudioTrackInfo?

        public init(id: String, camera: String?, format: VideoFormat, orientation: FrameTransform,
                    options: RecordingOptions, preset: String, jpegQuality: Int, encoded: EncodedStream? = nil,
                    trigger: MovieTrigger = .manual, startedAt: Double? = nil) {
            self.trigger = trigger
            self.startedAt = startedAt
            self.id = id
            self.camera = camera
            self.format = format
            self.orientation = orientation
            self.options = options
            self.preset = preset
            self.jpegQuality = jpegQuality
            self.encoded = encoded
        }
    }

    /// An H.264 stream encoded elsewhere: its SPS and PPS (Annex B) and its picture's size.
    public struct EncodedStream: Sendable, Equatable {
        public var extradata: [UInt8]
        public var width: Int
        public var height: Int
        public init(extradata: [UInt8], width: Int, height: Int) {
            self.extradata = extradata
            self.width = width
            self.height = height
        }
    }

    /// Frames waiting for the encoder; more are dropped, never queued.
    static let queueLimit = 3
    /// Access units waiting for the file (a shared stream: nothing to encode, so more may wait).
    static let unitQueueLimit = 30

    public let setup: Setup
    public let startedAt: Double
    private let store: MovieStore
    private let onEnd: @Sendable (RecordingOutcome) -> Void
    private let shared = Locked(Shared())
    /// The recorder's lane and the frames waiting for it (at most `queueLimit`).
    private let handoff: FrameHandoff<Job>

    struct Job: Sendable {
        /// The digital zoom at this frame and its centre (rotation and mirror are the file's, fixed).
        var zoom: Double
        var center = Point.center
        /// An access unit of a shared stream that starts a GOP.
        var keyframe = false
    }

    private struct Shared {
        var ending: (reason: RecordingEndReason, message: String?)?
        /// The recorder ended the movie itself (a limit, a full disk): frames still queued are not written.
        var stoppedItself = false
        var lastTaken: Double?
        var requested = 0
        var frames = 0
        var bytes: Int64 = 0
        var duration = 0.0
        var outcome: RecordingOutcome?
        /// A motion movie's event, and whether its snapshot was stored beside it.
        var event: MovieEvent?
        var snapshot = false
        var waiters: [CheckedContinuation<RecordingOutcome, Never>] = []
        /// Sound packets waiting for the lane, written after the next frame.
        var audio: [AudioPacket] = []
        var audioDropped = 0
    }

    /// Sound packets that may wait for the lane: ten seconds at 48 kHz (a lane stalled longer
    /// than that drops the oldest, as it drops frames).
    static let audioBacklog = 470

    /// Creates the file and the encoder (so a failure answers the start call) and starts
    /// the recorder's lane. `onEnd` is called once, from a pool thread, when the movie is done.
    public init(_ setup: Setup, store: MovieStore, pool: EncodePool,
                onEnd: @escaping @Sendable (RecordingOutcome) -> Void) throws(MovieError) {
        Self.quietLibraries
        self.setup = setup
        self.store = store
        self.onEnd = onEnd
        startedAt = setup.startedAt ?? Clock.now()
        try store.ensureDirectory()
        if setup.trigger == .motion { store.markMotion(setup.id) }
        let work = try RecorderWork(setup, path: store.partialPath(setup.id))
        let shared = self.shared, stoppedItself = self.stoppedItself
        let limit = setup.encoded == nil ? Self.queueLimit : max(Self.unitQueueLimit, setup.unitBacklog ?? 0)
        handoff = FrameHandoff(name: "\(setup.camera ?? "camera")-movie", policy: .queue(limit: limit), pool: pool) {
            { frame, job in
                guard !shared.withLock({ $0.stoppedItself }) else { return }
                var stop = work.write(frame.bytes, stride: frame.stride, timestamp: frame.timestamp, zoom: job.zoom, center: job.center,
                                      keyframe: job.keyframe, options: setup.options)
                if stop == nil {
                    // The frame set the movie's start: the sound that came meanwhile follows it.
                    stop = work.write(audio: shared.withLock { s in defer { s.audio = [] }; return s.audio })
                }
                let ended = shared.withLock { s -> Bool in
                    s.frames = work.writer.frames
                    s.bytes = work.writer.bytes
                    s.duration = Double(work.writer.endTicks) / Double(FragmentedMP4Writer.ticksPerSecond)
                    guard let stop, s.ending == nil else { return false }
                    s.ending = stop
                    s.stoppedItself = true
                    return true
                }
                if ended { stoppedItself.withLock { $0 }?() }
            }
        }
        self.work = work
        stoppedItself.withLock { $0 = { [weak self] in self?.close() } }
    }

    /// Closes the recording from its own work when a limit or a full disk ended it (set
    /// once `self` exists; the lane's work is made before).
    private let stoppedItself = Locked<(@Sendable () -> Void)?>(nil)

    /// The writer and its encoder, used by the recorder's lane alone (and, once that lane
    /// has worked off every frame, by `complete` on it).
    private let work: RecorderWork

    private static let quietLibraries: Void = { av_log_set_level(AV_LOG_ERROR) }()

    public var id: String { setup.id }

    public var status: RecordingStatus {
        let dropped = Int(handoff.figures.dropped)
        return shared.withLock { s in
            RecordingStatus(active: s.outcome == nil, id: setup.id, codec: setup.options.codec,
                            startedAt: StoredName.iso8601(startedAt), duration: s.duration, frames: s.frames,
                            bytes: s.bytes, dropped: dropped, timelapse: setup.options.timelapse)
        }
    }

    /// A shared stream's recorder takes access units, not frames: they count all the same.
    public var kind: OutputKind { .movie }

    public var report: OutputReport {
        let active = shared.withLock { $0.outcome == nil }
        return OutputReport(type: .movie, active: active, figures: handoff.figures)
    }

    /// Frames taken and not yet written: 0 when the recorder has caught up.
    public var backlog: Int { handoff.backlog }

    // MARK: - The capture thread's side (CaptureOutput)

    /// Recording, and (a timelapse) its next frame is due. A recorder of a shared stream
    /// takes access units instead.
    public func wants(_ frame: borrowing RawFrame, now: Double) -> Bool {
        guard setup.encoded == nil else { return false }
        let t = frame.timestamp
        return shared.withLock { s -> Bool in
            guard s.ending == nil, s.outcome == nil else { return false }
            if let lapse = setup.options.timelapse {
                switch lapse.trigger {
                case .interval:
                    if let last = s.lastTaken, t - last < (lapse.interval ?? 1) - 0.002 { return false }
                case .api:
                    guard s.requested > 0 else { return false }
                }
            }
            return true
        }
    }

    /// Queues the frame for the recorder's lane (a full queue drops it and counts it).
    public func take(_ frame: borrowing RawFrame, _ context: FrameContext) {
        let t = frame.timestamp
        guard handoff.submit(frame, Job(zoom: context.transform.zoom, center: context.transform.center)) else { return }
        shared.withLock { s in
            s.lastTaken = t
            if setup.options.timelapse?.trigger == .api { s.requested -= 1 }
        }
    }

    /// One access unit of the shared stream (Annex B), captured at `time` (the frames' clock),
    /// queued for the recorder's lane: it travels through the hand-off as a frame's bytes. False
    /// when the queue is full (the unit is dropped: the caller skips to the next keyframe).
    /// The capture time, not the encoder's ticks: the sound's packets are placed against it.
    public func submit(unit: [UInt8], time: Double, keyframe: Bool) -> Bool {
        guard let encoded = setup.encoded else { return false }
        let format = VideoFormat(pixelFormat: .mjpeg, width: encoded.width, height: encoded.height, fps: setup.format.fps)
        return unit.withUnsafeBytes { b in
            let frame = RawFrame(format: format, bytes: b, stride: b.count, sequence: 0, timestamp: time)
            return handoff.submit(frame, Job(zoom: 1, keyframe: keyframe))
        }
    }

    /// One AAC packet of the camera's microphone, queued for the recorder's lane (written
    /// after the next frame; the oldest dropped beyond `audioBacklog`).
    public func submit(audio packet: AudioPacket) {
        guard work.hasAudio else { return }
        shared.withLock { s in
            guard s.ending == nil, s.outcome == nil else { return }
            s.audio.append(packet)
            if s.audio.count > (setup.soundBacklog ?? Self.audioBacklog) {
                s.audio.removeFirst()
                s.audioDropped += 1
            }
        }
    }

    /// Whether the movie has a sound track (it takes `submit(audio:)`).
    public var hasAudio: Bool { work.hasAudio }

    // MARK: - The session's side

    /// A motion movie's event (its times so far) and whether its snapshot is stored
    /// (`MovieStore.writeSnapshot`): written into the movie's record when it ends.
    public func annotate(event: MovieEvent, snapshot: Bool) {
        shared.withLock { s in
            s.event = event
            s.snapshot = s.snapshot || snapshot
        }
    }

    /// A frame on demand (`timelapse.trigger` `api`): the next one captured is added.
    public func requestFrame() { shared.withLock { $0.requested += 1 } }

    /// Ends the recording for `reason`; the frames already queued are written first.
    /// Returns at once; `outcome()` waits for the file.
    public func finish(_ reason: RecordingEndReason) {
        let first = shared.withLock { s -> Bool in
            guard s.ending == nil else { return false }
            s.ending = (reason, nil)
            return true
        }
        if first { close() }
    }

    /// No more frames; once those queued are worked off, the file is completed on the
    /// recorder's lane, on a pool thread (`finish(then:)` never waits, so the work may call it too).
    /// Idempotent: the completion runs once.
    private func close() {
        handoff.finish { [self] in
            let ending = shared.withLock { s -> (reason: RecordingEndReason, message: String?)? in
                guard s.outcome == nil else { return nil }
                return s.ending ?? (.stopped, nil)
            }
            if let ending { complete(work, ending) }
        }
    }

    /// How the recording ended, once the file is complete.
    public func outcome() async -> RecordingOutcome {
        await withCheckedContinuation { c in
            let done = shared.withLock { s -> RecordingOutcome? in
                if let o = s.outcome { return o }
                s.waiters.append(c)
                return nil
            }
            if let done { c.resume(returning: done) }
        }
    }

    // MARK: - The recorder's lane

    private func complete(_ work: RecorderWork, _ ending: (reason: RecordingEndReason, message: String?)) {
        var reason = ending.reason, message = ending.message
        var movie: MovieInfo?
        let writer = work.writer
        let (event, snapshot) = shared.withLock { ($0.event, $0.snapshot) }
        do throws(MovieError) {
            if writer.frames == 0 {
                writer.abandon()
                try? Sys.unlink(writer.path)
            } else {
                // The sound that came after the last frame, up to the picture's end.
                let rest = shared.withLock { s in defer { s.audio = [] }; return s.audio }
                if !shared.withLock({ $0.stoppedItself }) { _ = work.write(audio: rest, before: work.videoEnd) }
                try writer.finish()
                let info = MovieInfo(
                    id: setup.id, url: MovieStore.url(setup.id), camera: setup.camera, codec: setup.options.codec,
                    width: writer.setup.width, height: writer.setup.height, rotation: writer.setup.rotation,
                    frames: writer.frames,
                    duration: MovieInfo.seconds(Double(writer.endTicks) / Double(FragmentedMP4Writer.ticksPerSecond)),
                    bytes: (try? Sys.stat(writer.path)).map { Int64($0.st_size) } ?? 0, startedAt: StoredName.iso8601(startedAt), reason: reason,
                    timelapse: setup.options.timelapse != nil, trigger: setup.trigger, event: event,
                    snapshot: snapshot ? MovieStore.snapshotURL(setup.id) : nil,
                    audio: writer.audioPackets > 0 ? writer.setup.audio.map(MovieAudio.init) : nil)
                try store.publish(info)
                movie = info
            }
        } catch {
            // The end itself failed (a full disk for the trailer): keep what is whole.
            writer.abandon()
            if error.isStorageFull { reason = .diskFull } else if reason != .diskFull { reason = .failed }
            message = message ?? error.description
            movie = try? store.finalize(id: setup.id, camera: setup.camera, startedAt: startedAt, reason: reason,
                                        timelapse: setup.options.timelapse != nil, trigger: setup.trigger, event: event,
                                        snapshot: snapshot)
        }
        // A movie neither published nor removed is still `.ID.mp4.part`: the next start
        // repairs and lists it, so nothing written is lost to a failed rename.
        let outcome = RecordingOutcome(id: setup.id, camera: setup.camera, reason: reason, movie: movie, message: message)
        let waiters = shared.withLock { s -> [CheckedContinuation<RecordingOutcome, Never>] in
            s.outcome = outcome
            if let movie { s.bytes = movie.bytes; s.frames = movie.frames; s.duration = movie.duration }
            defer { s.waiters = [] }
            return s.waiters
        }
        onEnd(outcome)  // first: the end is told to the session before whoever waits for the file
        for w in waiters { w.resume(returning: outcome) }
    }
}
