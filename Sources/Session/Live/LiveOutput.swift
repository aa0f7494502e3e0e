// The live H.264 output (issue 27): while a live client watches, each frame goes through a
// FrameHandoff (newest wins: a busy encoder skips frames rather than falling behind) to the
// camera's one encoder, whose access units become fMP4 fragments published to the LiveHub.
// The encoder and the muxer are made on the output's thread at its first frame (the format is
// the launch's); one per running pipeline, like the preview's workers.

import CameraCore
import Logging
import Movie
import SystemSupport

final class LiveOutput: CaptureOutput {
    struct Job: Sendable {
        var zoom: Double
        var rotation: Int
        var mirrored: Bool
        var keyframe: Bool
    }

    private let hub: LiveHub
    private let handoff: FrameHandoff<Job>

    init(hub: LiveHub, settings: LiveEncoderSettings, name: String, logger: Logger) {
        self.hub = hub
        // A replaced frame's keyframe request passes to the newer frame.
        let merge: @Sendable (Job, Job) -> Job = { older, newer in
            var job = newer
            job.keyframe = older.keyframe || newer.keyframe
            return job
        }
        handoff = FrameHandoff(name: "\(name)-live", policy: .newestWins, merge: merge) { [hub] in
            var encoder: LiveEncoder?
            var fragmenter: LiveFragmenter?
            var failures = 0
            return { frame, job in
                do throws(MovieError) {
                    // A turn by 90° swaps width and height: a new encoder, and a new stream (its
                    // fMP4 clients reconnect; RTP clients go on at the new size, SPS in band).
                    let transposed = job.rotation == 90 || job.rotation == 270
                    if encoder == nil || encoder?.transposed != transposed {
                        let e = try LiveEncoder(format: frame.format, settings: settings, transposed: transposed)
                        let f = try LiveFragmenter(width: e.width, height: e.height, fps: frame.format.fps, extradata: e.extradata)
                        (encoder, fragmenter) = (e, f)
                        hub.start(initSegment: f.initSegment,
                                  info: LiveStreamInfo(extradata: e.extradata, width: e.width, height: e.height, fps: frame.format.fps))
                    }
                    guard let encoder, let fragmenter else { return }
                    for unit in try encoder.encode(frame, zoom: job.zoom, rotation: job.rotation, mirrored: job.mirrored,
                                                   keyframe: job.keyframe) {
                        hub.publish(LiveFragment(unit: unit, mp4: try fragmenter.fragment(unit)))
                    }
                } catch {
                    failures += 1
                    if failures == 1 || failures % 100 == 0 { logger.error("live encode failed: \(error)") }
                }
            }
        }
    }

    func wants(_ frame: borrowing RawFrame, now: Double) -> Bool { hub.hasClients }

    func take(_ frame: borrowing RawFrame, _ context: FrameContext) {
        let t = context.transform
        handoff.submit(frame, Job(zoom: t.zoom, rotation: t.rotation, mirrored: t.mirrored, keyframe: hub.takeKeyframeRequest()))
    }

    func detached() { handoff.close() }
}
