// What a camera's live streams are, for the state and /api/cameras (issue 38): each stream's
// size as clients get it (turned when the orientation turns it), rate, cap and encoder — and
// the request that moves a cap while the streams run.

import CameraCore
import Movie

/// One live stream of a camera, as the state reports it.
public struct LiveStreamReport: Sendable, Equatable, Codable {
    /// `main` or `sub`.
    public var name: String
    public var width: Int
    public var height: Int
    public var fps: Int
    /// The VBV cap, kbit/s: set at runtime, configured, or the default at this size and rate.
    public var bitrate: Int
    /// The cap set at runtime (`POST …/session/live`); absent when it is the configured or default one.
    public var bitrateSet: Int?
    /// The encoder that makes it (`libx264`, or a hardware one: `h264_v4l2m2m`, `h264_vaapi`,
    /// `h264_nvenc`), or the one it would start with.
    public var encoder: String
    /// Someone consumes it now (it is encoded only then).
    public var active: Bool
    /// H.264's profile: `main`, or `constrainedBaseline` while a WebRTC viewer whose offer has
    /// no Main watches (nil: VP8).
    public var profile: H264Profile?
}

/// `POST …/session/live`: the main stream's and the sub stream's caps (each optional; null
/// returns a stream to its configured or default cap).
public struct LiveRequest: Sendable, Equatable {
    public enum Cap: Sendable, Equatable {
        case kbits(Int)
        case configured
    }
    public var main: Cap?
    public var sub: Cap?
    public init(main: Cap? = nil, sub: Cap? = nil) {
        self.main = main
        self.sub = sub
    }
}

extension CaptureSession {
    /// The camera's live streams at its current format and orientation.
    var liveStreams: [LiveStreamReport] {
        let turned = settings.orientation.rotation == 90 || settings.orientation.rotation == 270
        // The VP8 rendition only while a viewer takes it (it exists for such viewers alone).
        return LiveStreamName.allCases.filter { $0 != .vp8 || graph.live($0).hub.hasClients }.map { name in
            let output = graph.live(name)
            let f = output.figures(for: format)
            return LiveStreamReport(name: name.rawValue, width: turned ? f.height : f.width, height: turned ? f.width : f.height,
                                    fps: f.fps, bitrate: f.bitrate, bitrateSet: output.bitrateOverride, encoder: output.encoder,
                                    active: output.hub.hasClients, profile: output.profile)
        }
    }

    /// Moves the streams' caps: applied from each stream's next frame, no new stream, no keyframe.
    public func setLive(_ request: LiveRequest) -> SessionState {
        for (name, cap) in [(LiveStreamName.main, request.main), (.sub, request.sub)] {
            switch cap {
            case .kbits(let k)?: graph.live(name).bitrateOverride = k
            case .configured?: graph.live(name).bitrateOverride = nil
            case nil: break
            }
        }
        return announce()
    }
}
