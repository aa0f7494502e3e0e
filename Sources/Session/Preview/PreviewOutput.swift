// The preview output (AVCaptureVideoPreviewLayer's source): µStreamer's shape — a pool of
// encode workers where the newest frame wins, each finished frame published once, as the
// whole multipart part viewers are sent. It wants a frame only while someone looks (a
// viewer, a snapshot waiting): nobody watching, nothing is encoded. Frames carry the
// session's sequence, and the hub only moves forward, so a worker that finishes after a
// newer frame was published drops its own: viewers see frames in capture order.
//
// Kept across runs: its lane of the shared encode pool opens with each run and closes with it.

import CameraCore
import JPEG
import Logging
import SystemSupport

final class PreviewOutput: CaptureOutput {
    struct Job: Sendable {
        var sequence: UInt64
        var transform: FrameTransform
        var quality: Int
        var subsampling: ChromaSubsampling
    }

    private let hub: FrameHub
    private let settings: PipelineSettings
    private let lane: FrameLane<Job>
    private let failures = Locked(UInt64(0))

    init(hub: FrameHub, settings: PipelineSettings, workers: Int, pool: EncodePool, logger: Logger) {
        self.hub = hub
        self.settings = settings
        let failures = self.failures
        // A lane of the process's shared encode threads (`encode-N`), lent the camera's
        // buffer where it lends one (V4L2: no copy before the encode).
        lane = FrameLane { run in FrameHandoff(name: "\(run.camera)-encode", workers: workers, policy: .newestWins, lends: true,
                                             pool: pool) { [hub] in
            let encoder = FrameEncoder()  // this slot's libjpeg-turbo handles
            return { frame, job in
                let timestamp = EncodedFrame.format(frame.timestamp)
                do {
                    let image = try encoder.encode(frame, quality: job.quality, transform: job.transform,
                                                   subsampling: job.subsampling, framing: Multipart.framing(timestamp: timestamp))
                    hub.publish(EncodedFrame(bytes: image.bytes, jpegRange: image.jpegRange, width: image.width,
                                             height: image.height, sequence: job.sequence, timestamp: frame.timestamp))
                } catch {
                    let n = failures.withLock { n -> UInt64 in n += 1; return n }
                    if n == 1 || n % 100 == 0 { logger.error("encode failed: \(error)") }
                }
            }
        } }
    }

    /// Frames handed to the encoder by copying them, and on the camera's own (lent) buffer.
    var handoffs: (copied: UInt64, lent: UInt64) { lane.handoffs }

    /// Frames of this run someone waited for that a newer one replaced (the state's `frames.dropped`).
    var droppedThisRun: UInt64 { lane.runFigures.dropped }

    /// Its dropped frames: those someone waited for that did not reach them — a newer one
    /// replaced them while every slot was busy, or the encode failed.
    var kind: OutputKind { .preview }

    var report: OutputReport {
        var f = lane.figures
        f.dropped += failures.withLock { $0 }
        return OutputReport(type: .preview, active: hub.hasDemand, figures: f)
    }

    func wants(_ frame: borrowing RawFrame, now: Double) -> Bool { hub.hasDemand }

    func take(_ frame: borrowing RawFrame, _ context: FrameContext) {
        lane.submit(frame, Job(sequence: context.sequence, transform: context.transform,
                                  quality: settings.quality, subsampling: settings.subsampling))
    }

    func runStarted(_ run: CaptureRun) { lane.start(run) }

    /// Returns once every frame already taken is published (or dropped as older).
    func runEnded() { lane.end() }
}
