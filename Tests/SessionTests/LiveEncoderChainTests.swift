// The live encoders' candidates (issue 38): each probed with a short encode, what fails left
// out with why, the first that works used; one failing at an open passed over. The hardware
// ones are probed for real — on a machine without them (this one) their probes must fail
// with the call that failed — and the failures a device has are modelled by FakeEncoders.

import CameraCore
import CaptureTestSupport
import Foundation
import Logging
import Movie
import Testing
@testable import Session

@Suite struct LiveEncoderChainTests {
    static let format = VideoFormat(pixelFormat: .yuyv, width: 320, height: 240, fps: 30)

    @Test func theProbeLeavesOutWhatDoesNotEncodeAndSaysWhy() throws {
        let chain = LiveEncoderChain([FakeEncoders.absent("probe-absent"), FakeEncoders.stalled("probe-stalled"), .libavcodec(.x264)])
        let byName = Dictionary(uniqueKeysWithValues: chain.entries.map { ($0.name, $0) })
        #expect(byName["probe-absent"]?.available == false)
        #expect(byName["probe-absent"]?.reason?.contains("avcodec_open2 h264_probe-absent") == true, "\(byName["probe-absent"]?.reason ?? "")")
        #expect(byName["probe-stalled"]?.available == false)
        #expect(byName["probe-stalled"]?.reason?.contains("no keyframe") == true, "\(byName["probe-stalled"]?.reason ?? "")")
        #expect(byName["x264"]?.available == true && (byName["x264"]?.probeMs ?? 0) > 0)
        let encoder = try chain.make(format: Self.format, settings: LiveEncoderSettings(), transposed: false, origin: nil)
        #expect(encoder.name == "libx264")
        #expect(chain.preferred == "libx264")
    }

    /// The hardware encoders, probed for real: where the machine lacks the device each needs,
    /// the probe fails at the call that needs it (and the stream is libx264's).
    @Test func theHardwareProbesFailWhereTheMachineHasNone() throws {
        let chain = LiveEncoderChain(VideoEncoderKind.preferred.map(LiveEncoderCandidate.libavcodec))
        let byName = Dictionary(uniqueKeysWithValues: chain.entries.map { ($0.name, $0) })
        #expect(chain.entries.map(\.name) == ["v4l2m2m", "vaapi", "nvenc", "x264"])
        let renderNodes = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/dri")) ?? []
        if !renderNodes.contains(where: { $0.hasPrefix("renderD") }) {
            #expect(byName["vaapi"]?.available == false)
            #expect(byName["vaapi"]?.reason?.contains("av_hwdevice_ctx_create") == true, "\(byName["vaapi"]?.reason ?? "")")
        }
        if !FileManager.default.fileExists(atPath: "/dev/nvidia0") {
            #expect(byName["nvenc"]?.available == false)
            #expect(byName["nvenc"]?.reason?.contains("h264_nvenc") == true, "\(byName["nvenc"]?.reason ?? "")")
        }
        for e in chain.entries { #expect(e.available || e.reason != nil, "\(e.name) unavailable says why") }
        #expect(byName["x264"]?.available == true)
        let first = try #require(chain.entries.first { $0.available })
        let encoder = try chain.make(format: Self.format, settings: LiveEncoderSettings(), transposed: false, origin: nil)
        #expect(encoder.name == first.codec)
    }

    /// Unprobed (a candidate that passed its probe at 320x240 may still refuse a stream's own
    /// size): one failing at the stream's open is passed over from then on; the last never is.
    @Test func oneFailingAtTheOpenIsPassedOverAndTheLastKept() throws {
        let chain = LiveEncoderChain([FakeEncoders.absent("open-absent"), .libavcodec(.x264)], probe: false)
        #expect(chain.entries.allSatisfy { $0.available })
        let encoder = try chain.make(format: Self.format, settings: LiveEncoderSettings(), transposed: false, origin: nil)
        #expect(encoder.name == "libx264")
        #expect(chain.entries.first?.available == false && chain.entries.first?.reason?.contains("No such device") == true)
        let alone = LiveEncoderChain([FakeEncoders.absent("open-alone")], probe: false)
        #expect(throws: MovieError.self) { try alone.make(format: Self.format, settings: LiveEncoderSettings(), transposed: false, origin: nil) }
        #expect(alone.entries.first?.available == true, "the last candidate is never given up")
    }
}
