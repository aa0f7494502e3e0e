// A live H.264 output (issue 27): while a client watches its stream, each frame goes through a
// FrameHandoff (newest wins: a busy encoder skips frames rather than falling behind) to the
// stream's one encoder, whose access units are published to its LiveHub. A camera has two:
// the main stream (the camera's size and rate) and the sub stream (issue 38: smaller, slower,
// cheaper — for grids, detectors and slow links), each encoding only while someone consumes
// it. The encoder is the run's lane's one slot's work, made at its first frame (the format
// is the run's) and used by whichever pool thread serves the next frame.

import CameraCore
import Logging
import Movie
import SystemSupport

/// Which of a camera's live streams.
public enum LiveStreamName: String, Sendable, CaseIterable {
    case main, sub
    /// The main stream in VP8, for a WebRTC viewer whose offer has no H.264 (encoded only while one watches).
    case vp8

    /// The streams a client names (`?stream=`, RTSP's `/sub`): H.264's.
    public static let h264: [LiveStreamName] = [.main, .sub]
}

final class LiveOutput: CaptureOutput {
    struct Job: Sendable {
        /// Zoom (about its centre), rotation and mirror at this frame.
        var transform: FrameTransform
        var keyframe: Bool
        var bitrate: Int?
        /// The H.264 profile every client of the stream decodes now.
        var profile: H264Profile
    }

    let stream: LiveStreamName
    let hub: LiveHub
    let settings: LiveEncoderSettings
    private let lane: FrameLane<Job>
    /// The cap set while running (kbit/s; nil: `settings`' own), applied from the next frame.
    private let bitrate = Locked<Int?>(nil)
    /// The next capture time a frame is due at, for a stream slower than its camera.
    private let due = Locked(-Double.infinity)

    /// The encoder making the stream now (libavcodec's name), or the one it will start with.
    private let encoderName: Locked<String>

    init(_ stream: LiveStreamName, hub: LiveHub, settings: LiveEncoderSettings, encoders: LiveEncoderChain, pool: EncodePool, logger: Logger) {
        self.stream = stream
        self.hub = hub
        self.settings = settings
        // A replaced frame's keyframe request passes to the newer frame.
        let merge: @Sendable (Job, Job) -> Job = { older, newer in
            var job = newer
            job.keyframe = older.keyframe || newer.keyframe
            return job
        }
        let suffix = switch stream { case .main: "live"; case .sub: "sub"; case .vp8: "vp8" }
        let encoderName = Locked(encoders.preferred ?? "libx264")
        self.encoderName = encoderName
        lane = FrameLane { run in FrameHandoff(name: "\(run.camera)-\(suffix)", policy: .newestWins, merge: merge, pool: pool) { [hub] in
            let name = run.camera
            var encoder: (any LiveVideoEncoding)?
            /// Whether the hub was told of the encoder's stream (a hardware one says its SPS at
            /// its first IDR), and whether it replaces a failed one (its clients go on).
            var announced = false, replacing = false
            /// The cap without an override: the configured one, or the default at this size.
            var configuredCap = 0
            var failures = 0
            return { frame, job in
                do throws(MovieError) {
                    // A turn by 90° swaps width and height: a new encoder, and a new stream (its
                    // fMP4 clients reconnect; RTP clients go on at the new size, SPS in band).
                    let transposed = job.transform.rotation == 90 || job.transform.rotation == 270
                    var s = settings
                    s.bitrate = job.bitrate ?? settings.bitrate
                    if stream != .vp8 { s.profile = job.profile }
                    // A viewer that decodes Constrained Baseline alone came (or the last left): the
                    // one encode changes profile from an IDR of this frame, its clients staying.
                    let reprofile = stream != .vp8 && encoder.map { $0.transposed == transposed && $0.profile != job.profile } == true
                    if encoder == nil || encoder?.transposed != transposed || reprofile {
                        // An encoder's threads, started by the open, are named for the camera, not the pool.
                        let origin = reprofile ? encoder?.origin : nil
                        let e = try ThreadName.lending("\(name)-enc") { () throws(MovieError) in
                            try encoders.make(format: frame.format, settings: s, transposed: transposed, origin: origin)
                        }
                        (encoder, announced, replacing) = (e, false, reprofile)
                        let (w, h) = settings.size(ofCamera: frame.format.width, frame.format.height)
                        configuredCap = settings.cap(width: w, height: h, fps: e.fps)
                        encoderName.withLock { $0 = e.name }
                    }
                    guard var current = encoder else { return }
                    current.setBitrate(job.bitrate ?? configuredCap)
                    var units: [AccessUnit]
                    do throws(MovieError) {
                        units = try current.encode(frame, transform: job.transform, keyframe: job.keyframe)
                    } catch {
                        // The encoder failed mid-stream (a hardware one lost): the next candidate
                        // goes on with the same timeline from an IDR of this frame; clients stay.
                        let next = ThreadName.lending("\(name)-enc") {
                            encoders.fallback(from: current.name, error, format: frame.format, settings: s, transposed: transposed,
                                              origin: current.origin)
                        }
                        guard let next else { throw error }
                        logger.warning("live \(stream.rawValue) stream of \(name): \(current.name) failed (\(error)); going on with \(next.name) from an IDR")
                        (encoder, current, announced, replacing) = (next, next, false, true)
                        encoderName.withLock { $0 = next.name }
                        next.setBitrate(job.bitrate ?? configuredCap)
                        units = try next.encode(frame, transform: job.transform, keyframe: true)
                    }
                    if !announced && current.describable {
                        let info = LiveStreamInfo(extradata: current.extradata, width: current.width, height: current.height, fps: current.fps)
                        if replacing { hub.replace(info) } else { hub.start(info) }
                        announced = true
                    }
                    guard announced else { return }  // before a hardware encoder's first IDR: nothing a client could decode
                    for unit in units { hub.publish(unit) }
                } catch {
                    failures += 1
                    if failures == 1 || failures % 100 == 0 { logger.error("live \(stream.rawValue) encode failed: \(error)") }
                }
            }
        } }
    }

    var kind: OutputKind {
        switch stream {
        case .main: .live
        case .sub: .liveSub
        case .vp8: .liveVP8
        }
    }

    /// The encoder making the stream (or the one it starts with): `libx264`, `h264_v4l2m2m`...
    var encoder: String { encoderName.withLock { $0 } }

    /// The H.264 profile the stream is in for its clients now (nil: VP8's).
    var profile: H264Profile? { stream == .vp8 ? nil : hub.profile }

    var report: OutputReport { OutputReport(type: kind, active: hub.hasClients, figures: lane.figures) }

    /// The cap set at runtime (nil: back to the configured or default one), from the next frame.
    var bitrateOverride: Int? {
        get { bitrate.withLock { $0 } }
        set { bitrate.withLock { $0 = newValue } }
    }

    /// What the stream is for a camera of `format`: its size (unturned), rate and cap.
    func figures(for format: VideoFormat) -> (width: Int, height: Int, fps: Int, bitrate: Int) {
        let (w, h) = settings.size(ofCamera: format.width, format.height)
        let fps = settings.rate(ofCamera: max(1, format.fps))
        return (w, h, fps, bitrateOverride ?? settings.cap(width: w, height: h, fps: fps))
    }

    func wants(_ frame: borrowing RawFrame, now: Double) -> Bool {
        guard hub.hasClients else { return false }
        guard let fps = settings.fps, fps < frame.format.fps else { return true }
        // Slower than the camera: a frame when one is due (a tenth of an interval early is
        // on time), the next one interval on, or from this frame after a pause.
        let interval = 1 / Double(fps), t = frame.timestamp
        return due.withLock { due in
            guard t >= due - interval / 10 else { return false }
            due = t - due > interval ? t + interval : due + interval
            return true
        }
    }

    func take(_ frame: borrowing RawFrame, _ context: FrameContext) {
        lane.submit(frame, Job(transform: context.transform, keyframe: hub.takeKeyframeRequest(),
                               bitrate: bitrateOverride, profile: hub.profile))
    }

    func runStarted(_ run: CaptureRun) { lane.start(run) }

    func runEnded() {
        lane.end()
        hub.end()
    }
}
