// Capture → encode → publish for one running camera. The capture thread offers each frame
// to the outputs (movie, metadata) and, only when someone will look at it (a viewer, a
// snapshot waiting, or a photo), hands a copy to the encode workers (EncodeWorkers); they encode
// (photos at their own quality) and publish, newest wins. The capture thread never waits
// for an encoder, and no lock is held while encoding or while waking anyone.

import CameraCore
import Foundation
import JPEG
import Logging
import Movie
import SystemSupport

final class FramePipeline: Sendable {
    private let hub: FrameHub
    private let settings: PipelineSettings
    private let logger: Logger
    private let photos = PhotoCapture()
    /// Taking frames (false once deactivated), and who to tell of the first one: checked
    /// together, one lock a frame.
    private let intake: Locked<(active: Bool, firstFrame: (@Sendable () -> Void)?)>
    private let counters = Counters()
    private let workers: EncodeWorkers
    /// The movie output, when recording: offered every frame, before any encode.
    private let recorder = Locked<MovieRecorder?>(nil)

    /// The metadata output: offered frames at its own rate, whatever the viewers do.
    private let metadata: MetadataOutput
    init(hub: FrameHub, settings: PipelineSettings, metadata: MetadataOutput, workers: Int, name: String, logger: Logger,
         firstFrame: (@Sendable () -> Void)? = nil) {
        self.hub = hub
        // `firstFrame` is told once, on the capture thread: a camera reopened after a loss is back
        // only once it delivers.
        self.intake = Locked((active: true, firstFrame: firstFrame))
        self.metadata = metadata
        self.settings = settings
        self.logger = logger
        let counters = self.counters
        self.workers = EncodeWorkers(count: workers, name: name, encode: { encoder, frame, quality, transform, subsampling, sequence in
            do {
                let image = try encoder.encode(frame, quality: quality, transform: transform, subsampling: subsampling)
                return EncodedFrame(jpeg: image.jpeg, width: image.width, height: image.height,
                                    sequence: sequence, timestamp: frame.timestamp)
            } catch {
                let n = counters.failures.withLock { n -> UInt64 in n += 1; return n }
                if n == 1 || n % 100 == 0 { logger.error("encode failed: \(error)") }
                return nil
            }
        }, publish: { [hub] frame in hub.publish(frame) })
    }

    /// Frames someone was waiting for that did not reach them: every worker was busy, or
    /// the encode failed.
    var dropped: UInt64 { workers.skipped + counters.failures.withLock { $0 } }

    var workerCount: Int { workers.count }

    /// After this returns no new frame from this pipeline is taken, and every frame already
    /// handed to a worker has been published (or dropped as older); waiting photos answer at once.
    func deactivate() {
        intake.withLock { $0.active = false }
        workers.close()
        photos.close()
    }

    func attach(_ r: MovieRecorder?) { recorder.withLock { $0 = r } }

    func requestCapture(quality: Int, requested: Double) -> CaptureTicket {
        photos.request(quality: quality, requested: requested)
    }

    func handle(_ frame: borrowing RawFrame) {
        let (active, first) = intake.withLock { i -> (Bool, (@Sendable () -> Void)?) in
            defer { i.firstFrame = nil }
            return (i.active, i.active ? i.firstFrame : nil)
        }
        guard active else { return }
        first?()
        // The outputs read the transform only for a frame they take (most frames they don't).
        let now = Clock.monotonic()
        if let r = recorder.withLock({ $0 }) { r.offer(frame, transform: self.settings.transform(at: now)) }
        metadata.offer(frame, transform: self.settings.transform(at: now))
        let (timestamp, format, stride) = (frame.timestamp, frame.format, frame.stride)
        let preview = hub.hasDemand
        guard preview || photos.isDue(at: timestamp) else { return }  // nobody looks: don't encode
        _ = workers.submit(frame) {
            EncodeWorkers.Job(format: format, stride: stride, timestamp: timestamp,
                              sequence: hub.takeSequence(), transform: settings.transform(at: now),
                              preview: preview ? (settings.quality, settings.subsampling) : nil,
                              photos: photos.due(at: timestamp))
        }
    }
}

/// Failed encodes (counted by the workers).
private final class Counters: Sendable {
    let failures = Locked(UInt64(0))
}

/// What the capture thread reads per frame while the session may change it.
public final class PipelineSettings: Sendable {
    private struct Values {
        var quality: Int
        /// The preview's chroma (photos keep the source's).
        var subsampling: ChromaSubsampling
        var ramp = ZoomRamp.fixed(1)
        /// The lens's reach: the crop is the part of the zoom beyond it.
        var opticalMax = 1.0
        var rotation = 0
        var mirrored = false
    }
    private let values: Locked<Values>

    public init(quality: Int, subsampling: ChromaSubsampling = .s422) {
        values = Locked(Values(quality: quality, subsampling: subsampling))
    }

    public var subsampling: ChromaSubsampling { values.withLock { $0.subsampling } }

    public var quality: Int {
        get { values.withLock { $0.quality } }
        set { values.withLock { $0.quality = newValue } }
    }

    public var ramp: ZoomRamp {
        get { values.withLock { $0.ramp } }
        set { values.withLock { $0.ramp = newValue } }
    }

    public var opticalMax: Double {
        get { values.withLock { $0.opticalMax } }
        set { values.withLock { $0.opticalMax = newValue } }
    }

    public func setOrientation(rotation: Int, mirrored: Bool) {
        values.withLock { $0.rotation = rotation; $0.mirrored = mirrored }
    }

    /// The crop at time `t`: only the part of the zoom the lens cannot do.
    public func digitalZoom(at t: Double) -> Double {
        values.withLock { max(1, $0.ramp.factor(at: t) / $0.opticalMax) }
    }

    public func transform(at t: Double) -> FrameTransform {
        values.withLock { v in
            FrameTransform(zoom: max(1, v.ramp.factor(at: t) / v.opticalMax), rotation: v.rotation, mirrored: v.mirrored)
        }
    }
}
