// Capture → encode → publish for one running camera. Runs on the camera's capture thread;
// encodes each frame once, and only when someone will look at it: a viewer, a snapshot
// waiting, or a photo (encoded at its own quality). No lock is held while encoding or
// while waking anyone.

import CameraCore
import Foundation
import JPEG
import Logging
import Movie
import Synchronization

final class FramePipeline: @unchecked Sendable {  // the encoder: the capture thread's alone
    private let hub: FrameHub
    private let settings: PipelineSettings
    private let logger: Logger
    private let photos = PhotoCapture()
    private let active = Mutex(true)
    private let counters = Mutex((captured: UInt64(0), failures: UInt64(0)))
    private let encoder = FrameEncoder()
    /// The movie output, when recording: offered every frame, before any encode.
    private let recorder = Mutex<MovieRecorder?>(nil)

    /// The metadata output: offered frames at its own rate, whatever the viewers do.
    private let metadata: MetadataOutput

    init(hub: FrameHub, settings: PipelineSettings, metadata: MetadataOutput, logger: Logger) {
        self.hub = hub
        self.metadata = metadata
        self.settings = settings
        self.logger = logger
    }

    var failures: UInt64 { counters.withLock { $0.failures } }

    /// After this returns no new frame from this pipeline is taken (the one in flight, if
    /// any, finishes before its camera's `stop` returns); waiting photos answer at once.
    func deactivate() {
        active.withLock { $0 = false }
        photos.close()
    }

    func attach(_ r: MovieRecorder?) { recorder.withLock { $0 = r } }

    func requestCapture(quality: Int, requested: Double) -> CaptureTicket {
        photos.request(quality: quality, requested: requested)
    }

    func handle(_ frame: borrowing RawFrame) {
        guard active.withLock({ $0 }) else { return }
        counters.withLock { $0.captured += 1 }
        // The outputs read the transform only for a frame they take (most frames they don't).
        let now = Clock.monotonic()
        if let r = recorder.withLock({ $0 }) { r.offer(frame, transform: self.settings.transform(at: now)) }
        metadata.offer(frame, transform: self.settings.transform(at: now))
        let due = photos.due(at: frame.timestamp)
        let preview = hub.hasDemand
        guard preview || !due.isEmpty else { return }  // nobody looks: don't encode
        let sequence = hub.takeSequence()
        let transform = settings.transform(at: now)
        for ticket in due {
            ticket.fulfil(encode(frame, quality: ticket.quality, transform: transform, subsampling: .s422, sequence: sequence))
        }
        if preview, let f = encode(frame, quality: settings.quality, transform: transform, subsampling: settings.subsampling,
                                   sequence: sequence) {
            hub.publish(f)
        }
    }

    private func encode(_ frame: borrowing RawFrame, quality: Int, transform: FrameTransform,
                        subsampling: ChromaSubsampling, sequence: UInt64) -> EncodedFrame? {
        do {
            let image = try encoder.encode(frame, quality: quality, transform: transform, subsampling: subsampling)
            return EncodedFrame(jpeg: image.jpeg, width: image.width, height: image.height,
                                sequence: sequence, timestamp: frame.timestamp)
        } catch {
            let n = counters.withLock { c -> UInt64 in c.failures += 1; return c.failures }
            if n == 1 || n % 100 == 0 { logger.error("encode failed: \(error)") }
            return nil
        }
    }
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
    private let values: Mutex<Values>

    public init(quality: Int, subsampling: ChromaSubsampling = .s422) {
        values = Mutex(Values(quality: quality, subsampling: subsampling))
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
