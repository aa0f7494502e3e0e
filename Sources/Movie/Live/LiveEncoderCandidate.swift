// One encoder a live stream may be made by, and the probe that says whether this machine has
// it (issue 38), as go2rtc does: a short encode at start — open it, give it a few frames, and
// it works if an IDR comes out. A hardware encoder this machine lacks fails at the open (no
// V4L2 memory-to-memory device, no render node, no CUDA driver) and is left out, with why.

import CameraCore
import Foundation

public struct LiveEncoderCandidate: Sendable {
    public typealias Make = @Sendable (_ format: VideoFormat, _ settings: LiveEncoderSettings, _ transposed: Bool,
                                       _ origin: Double?) throws(MovieError) -> any LiveVideoEncoding
    /// What it is called in `live.encoders` and the state (`x264`, `v4l2m2m`...).
    public let name: String
    /// libavcodec's encoder behind it.
    public let codec: String
    public let make: Make

    public init(name: String, codec: String, make: @escaping Make) {
        self.name = name
        self.codec = codec
        self.make = make
    }

    /// libavcodec's encoder of `kind`.
    public static func libavcodec(_ kind: VideoEncoderKind) -> LiveEncoderCandidate {
        LiveEncoderCandidate(name: kind.rawValue, codec: kind.codecName) { format, settings, transposed, origin throws(MovieError) in
            try LiveEncoder(format: format, settings: settings, transposed: transposed, kind: kind, origin: origin)
        }
    }

    /// Frames the probe gives: enough for an encoder with a pipeline of a few frames to say its first.
    static let probeFrames = 15

    /// Opens it at 320x240 and encodes `probeFrames` frames of a moving gradient: success when an
    /// IDR came out (its milliseconds), else the error it failed with.
    public func probe() -> Result<Double, MovieError> {
        let format = VideoFormat(pixelFormat: .yuyv, width: 320, height: 240, fps: 30)
        let start = Date()
        do throws(MovieError) {
            let encoder = try make(format, LiveEncoderSettings(), false, nil)
            var bytes = [UInt8](repeating: 0x80, count: format.width * format.height * 2)
            var keyframe = false
            for n in 0..<Self.probeFrames where !keyframe {
                for i in stride(from: 0, to: bytes.count, by: 2) { bytes[i] = UInt8(truncatingIfNeeded: i / 2 + n * 4) }
                let units = bytes.withUnsafeBytes { b in
                    Result { () throws(MovieError) in
                        try encoder.encode(RawFrame(format: format, bytes: b, stride: format.width * 2, sequence: UInt64(n),
                                                    timestamp: 1_000 + Double(n) / 30),
                                           transform: .identity, keyframe: n == 0)
                    }
                }
                keyframe = try units.get().contains { $0.keyframe }
            }
            guard keyframe else { return .failure(.unsupported("\(codec) gave no keyframe in \(Self.probeFrames) frames")) }
            return .success(Date().timeIntervalSince(start) * 1000)
        } catch {
            return .failure(error)
        }
    }
}
