// The live H.264 output (issue 27): while a live client watches, each frame goes through a
// FrameHandoff (newest wins: a busy encoder skips frames rather than falling behind) to the
// camera's one encoder, whose access units become fMP4 fragments published to the LiveHub.
// The encoder and the muxer are the lane's one slot's work, made at its first frame (the
// format is the launch's) and used by whichever pool thread serves the next frame.

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

    init(hub: LiveHub, settings: LiveEncoderSettings, name: String, pool: EncodePool, logger: Logger) {
        self.hub = hub
        // A replaced frame's keyframe request passes to the newer frame.
        let merge: @Sendable (Job, Job) -> Job = { older, newer in
            var job = newer
            job.keyframe = older.keyframe || newer.keyframe
            return job
        }
        handoff = FrameHandoff(name: "\(name)-live", policy: .newestWins, merge: merge, pool: pool) { [hub] in
            var encoder: LiveEncoder?
            var fragmenter: LiveFragmenter?
            var failures = 0
            return { frame, job in
                do throws(MovieError) {
                    // A turn by 90° swaps width and height: a new encoder, and a new stream (its
                    // fMP4 clients reconnect; RTP clients go on at the new size, SPS in band).
                    let transposed = job.rotation == 90 || job.rotation == 270
                    if encoder == nil || encoder?.transposed != transposed {
                        // x264's threads, started by the open, are named for the camera, not the pool.
                        let e = try ThreadName.lending("\(name)-x264") { () throws(MovieError) in
                            try LiveEncoder(format: frame.format, settings: settings, transposed: transposed)
                        }
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

    var report: OutputReport { OutputReport(type: .live, active: hub.hasClients, figures: handoff.figures) }

    func wants(_ frame: borrowing RawFrame, now: Double) -> Bool { hub.hasClients }

    func take(_ frame: borrowing RawFrame, _ context: FrameContext) {
        let t = context.transform
        handoff.submit(frame, Job(zoom: t.zoom, rotation: t.rotation, mirrored: t.mirrored, keyframe: hub.takeKeyframeRequest()))
    }

    func detached() { handoff.close() }
}
