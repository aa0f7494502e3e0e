// Live H.264 encoders as hardware ones fail (issue 38), for the candidate chain's tests: the
// machine has none, so the code a Raspberry Pi or a NUC runs — probe, pass over, hand over
// mid-stream — is tested with encoders that fail the way a device does.
//
// - `absent`: its device is not there — the open fails with ENODEV, as h264_v4l2m2m's does
//   where no memory-to-memory encoder is.
// - `stalled`: opens and takes frames but never gives one back (a firmware that hangs).
// - `failing(after:)`: libx264 in its `ultrafast` preset (CAVLC: other parameter sets than the
//   live stream's CABAC, as a hardware encoder's differ) whose every call fails with EIO after
//   `frames` frames — a device unplugged or reset mid-stream.

import CameraCore
import Foundation
import Movie

public enum FakeEncoders {
    public static func absent(_ name: String = "absent") -> LiveEncoderCandidate {
        LiveEncoderCandidate(name: name, codec: "h264_\(name)") { _, _, _, _ throws(MovieError) in
            throw MovieError.library(call: "avcodec_open2 h264_\(name)", code: -ENODEV)
        }
    }

    public static func stalled(_ name: String = "stalled") -> LiveEncoderCandidate {
        LiveEncoderCandidate(name: name, codec: "h264_\(name)") { format, settings, transposed, origin throws(MovieError) in
            Stalled(try LiveEncoder(format: format, settings: settings, transposed: transposed, origin: origin), name: "h264_\(name)")
        }
    }

    public static func failing(after frames: Int, name: String = "failing") -> LiveEncoderCandidate {
        LiveEncoderCandidate(name: name, codec: "h264_\(name)") { format, settings, transposed, origin throws(MovieError) in
            var s = settings
            s.preset = "ultrafast"
            return Failing(try LiveEncoder(format: format, settings: s, transposed: transposed, origin: origin), name: "h264_\(name)", after: frames)
        }
    }

    /// A real encoder behind the seam, with what a device would do instead.
    class Wrapped: LiveVideoEncoding {
        let inner: LiveEncoder
        let name: String
        init(_ inner: LiveEncoder, name: String) {
            self.inner = inner
            self.name = name
        }
        var width: Int { inner.width }
        var height: Int { inner.height }
        var transposed: Bool { inner.transposed }
        var fps: Int { inner.fps }
        var bitrate: Int { inner.bitrate }
        var extradata: [UInt8] { inner.extradata }
        var origin: Double? { inner.origin }
        var describable: Bool { inner.describable }
        var profile: H264Profile { inner.profile }
        func setBitrate(_ kbits: Int) { inner.setBitrate(kbits) }
        func encode(_ frame: borrowing RawFrame, transform: FrameTransform, keyframe: Bool) throws(MovieError) -> [AccessUnit] {
            try inner.encode(frame, transform: transform, keyframe: keyframe)
        }
    }

    final class Stalled: Wrapped {
        override func encode(_ frame: borrowing RawFrame, transform: FrameTransform, keyframe: Bool) throws(MovieError) -> [AccessUnit] { [] }
    }

    final class Failing: Wrapped {
        private let limit: Int
        private var frames = 0
        init(_ inner: LiveEncoder, name: String, after limit: Int) {
            self.limit = limit
            super.init(inner, name: name)
        }
        override func encode(_ frame: borrowing RawFrame, transform: FrameTransform, keyframe: Bool) throws(MovieError) -> [AccessUnit] {
            frames += 1
            guard frames <= limit else { throw MovieError.library(call: "avcodec_send_frame \(name)", code: -EIO) }
            return try super.encode(frame, transform: transform, keyframe: keyframe)
        }
    }
}
