// Each camera's two live streams as the session has them, for the media service's suites: the
// main stream is the camera's format — 1920x1080 at 30 or 15 fps, 1280x720 at 60 or 30,
// 640x480 at 30 — and a rate the format lacks becomes the nearest it has (as the session's
// prepare resolves it); the sub stream is 640 wide at the main's aspect (at most half its width), at most 15 fps, and
// neither its size nor its rate can be set. Each stream has its own cap (100…100 000 kbit/s).
// A third profile per camera is its preview's JPEG pictures (RTP/JPEG) at the main stream's
// size and rate, quality 8 (the preview's 80), offered only as it is.
// The rear camera has a microphone (48 kHz mono, AAC at 64 kbit/s) whose sound both its
// streams carry; the front one has none.

import ONVIF
import SOAP
import SystemSupport

final class StreamModel: Sendable {
    static let formats: [(width: Int, height: Int, fps: [Int])] = [(1920, 1080, [30, 15]), (1280, 720, [60, 30]), (640, 480, [30])]
    struct Streams: Equatable { var width = 1280, height = 720, fps = 30, main = 2200, sub = 500 }
    let cameras = Locked(["rear": Streams(), "front": Streams()])

    func profiles(_ c: ONVIFContext) -> [MediaProfile] {
        ["rear", "front"].flatMap { cam -> [MediaProfile] in
            let s = cameras.withLock { $0[cam]! }
            let sub = Self.sub(s)
            let audio = cam == "rear" ? AudioProfile(source: "rear_mic", sampleRate: 48_000, channels: 1, bitrate: 64) : nil
            return [
                MediaProfile(token: "\(cam)_main", name: "\(cam) main", source: cam, width: s.width, height: s.height, fps: s.fps,
                             bitrate: s.main, govLength: 2 * s.fps, h264Profile: "Main", streamURI: "rtsp://\(c.hostName):8554/\(cam)",
                             snapshotURI: "\(c.base)/cameras/\(cam)/snapshot", audio: audio),
                MediaProfile(token: "\(cam)_sub", name: "\(cam) sub", source: cam, width: sub.width, height: sub.height, fps: sub.fps,
                             bitrate: s.sub, govLength: 2 * sub.fps, h264Profile: "Main", streamURI: "rtsp://\(c.hostName):8554/\(cam)/sub",
                             snapshotURI: "\(c.base)/cameras/\(cam)/snapshot", audio: audio),
                jpeg(cam, s, c),
            ]
        }
    }

    func jpeg(_ cam: String, _ s: Streams, _ c: ONVIFContext) -> MediaProfile {
        var p = MediaProfile(token: "\(cam)_jpeg", name: "\(cam) jpeg", source: cam, width: s.width, height: s.height, fps: s.fps,
                             bitrate: 9000, govLength: 1, h264Profile: "", streamURI: "rtsp://\(c.hostName):8554/\(cam)/jpeg",
                             snapshotURI: "\(c.base)/cameras/\(cam)/snapshot")
        p.encoding = .jpeg
        p.quality = 8
        return p
    }

    static func sub(_ s: Streams) -> (width: Int, height: Int, fps: Int) {
        let width = min(640, s.width / 2) & ~1
        return (width, Int((Double(width) * Double(s.height) / Double(s.width) / 2).rounded()) * 2, min(15, s.fps))
    }

    func options(_ token: String) -> EncoderOptions? {
        let parts = token.split(separator: "_").map(String.init)
        guard parts.count == 2, let s = cameras.withLock({ $0[parts[0]] }) else { return nil }
        switch parts[1] {
        case "main":
            return EncoderOptions(resolutions: Self.formats.map { PictureSize(width: $0.width, height: $0.height) }, fps: 15...60,
                                  bitrate: 100...100_000, govLength: 2 * s.fps...2 * s.fps, h264Profiles: ["Main"])
        case "jpeg":
            return EncoderOptions(resolutions: [PictureSize(width: s.width, height: s.height)], fps: s.fps...s.fps, bitrate: 9000...9000,
                                  govLength: 1...1, h264Profiles: [], encoding: .jpeg, quality: 8...8)
        case "sub":
            let sub = Self.sub(s)
            return EncoderOptions(resolutions: [PictureSize(width: sub.width, height: sub.height)], fps: sub.fps...sub.fps,
                                  bitrate: 100...100_000, govLength: 2 * sub.fps...2 * sub.fps, h264Profiles: ["Main"])
        default: return nil
        }
    }

    func set(_ token: String, _ setting: EncoderSetting) throws(SOAPFault) {
        let parts = token.split(separator: "_").map(String.init)
        guard parts.count == 2, ["main", "sub", "jpeg"].contains(parts[1]), cameras.withLock({ $0[parts[0]] }) != nil else {
            throw SOAPFault(.sender, [QName(ONVIFNamespace.error, "InvalidArgVal"), QName(ONVIFNamespace.error, "NoConfig")], "no \(token)")
        }
        cameras.withLock { all in
            var s = all[parts[0]]!
            if parts[1] == "main" {
                let format = Self.formats.first { $0.width == setting.size.width && $0.height == setting.size.height }!
                s.width = format.width; s.height = format.height
                s.fps = format.fps.min { abs($0 - setting.fps) < abs($1 - setting.fps) }!
                s.main = setting.bitrate
            } else if parts[1] == "sub" {
                s.sub = setting.bitrate
            }  // the JPEG profile: its options are what it is
            all[parts[0]] = s
        }
    }
}
