// ONVIF's encoder configurations on the session (issue 39): a profile's stream is a camera's
// main or sub live stream. The main stream is the camera's picture, so its size and rate are
// the camera's format (the session's prepare, as `POST /api/session/prepare` does: viewers
// stay connected); each stream's BitrateLimit is its live cap (`POST …/session/live`). The sub
// stream's size and rate are config.json's `live.sub`: offered as they are, not changed here;
// the JPEG profile's pictures are the preview's, offered as they are too.

import CameraCore
import ONVIF
import SOAP
import Session

extension ONVIFService {
    /// The camera and stream a profile token (`<camera>_main`, `<camera>_sub`) names.
    private func stream(_ token: String) -> (CaptureSession, LiveStreamName)? {
        for s in cameras.sessions {
            for name in [LiveStreamName.main, .sub] where token == "\(s.id)_\(name.rawValue)" { return (s, name) }
        }
        return nil
    }

    /// The camera whose JPEG profile (`<camera>_jpeg`) a token names.
    private func jpeg(_ token: String) -> CaptureSession? { cameras.sessions.first { token == "\($0.id)_jpeg" } }

    func encoderOptions(_ profile: String) async -> EncoderOptions? {
        if let session = jpeg(profile) {
            // The preview's pictures: offered as they are (its size and rate are the camera's,
            // set through the main profile; its quality config.json's stream.quality). Its
            // figures do not depend on the address asked at.
            let anywhere = ONVIFContext(host: "", secure: false, remoteAddress: "", now: 0)
            guard let p = jpegProfile(session, await session.state(), port: nil, anywhere) else { return nil }
            return EncoderOptions(resolutions: [PictureSize(width: p.width, height: p.height)], fps: p.fps...p.fps, bitrate: p.bitrate...p.bitrate,
                                  govLength: 1...1, h264Profiles: [], encoding: .jpeg, quality: p.quality...p.quality)
        }
        guard let (session, name) = stream(profile) else { return nil }
        let state = await session.state()
        guard let now = state.live.first(where: { $0.name == name.rawValue }) else { return nil }
        let gov = govLength(fps: now.fps)
        let h264 = now.profile == .constrainedBaseline ? "Baseline" : "Main"
        guard name == .main else {
            return EncoderOptions(resolutions: [PictureSize(width: now.width, height: now.height)], fps: now.fps...now.fps,
                                  bitrate: Self.bitrates, govLength: gov...gov, h264Profiles: [h264])
        }
        // Every size the camera has (as the stream sends it: even, and turned with the picture).
        let turned = Self.turned(state)
        let formats = session.camera.formats
        var sizes: [PictureSize] = []
        for f in formats.sorted(by: { $0.width * $0.height > $1.width * $1.height }) {
            let (w, h) = (max(2, f.width & ~1), max(2, f.height & ~1))
            let size = turned ? PictureSize(width: h, height: w) : PictureSize(width: w, height: h)
            if !sizes.contains(size) { sizes.append(size) }
        }
        let rates = formats.flatMap(\.fps)
        return EncoderOptions(resolutions: sizes, fps: (rates.min() ?? now.fps)...(rates.max() ?? now.fps),
                              bitrate: Self.bitrates, govLength: gov...gov, h264Profiles: [h264])
    }

    /// The picture is sent turned a quarter (its width and height swapped).
    static func turned(_ state: SessionState) -> Bool { state.orientation.rotation == 90 || state.orientation.rotation == 270 }

    /// What `live.bitrate` and `POST …/session/live` accept, kbit/s.
    static let bitrates = 100...100_000

    func setEncoder(_ profile: String, _ setting: EncoderSetting) async throws(SOAPFault) {
        if jpeg(profile) != nil { return }  // its options are what it is: nothing to change
        guard let (session, name) = stream(profile) else { throw Self.noSource(profile) }
        let state = await session.state()
        guard let now = state.live.first(where: { $0.name == name.rawValue }) else { throw Self.noSource(profile) }
        if name == .main, setting.size != PictureSize(width: now.width, height: now.height) || setting.fps != now.fps {
            // The camera's format: unturned, in the pixel format it has now where that has the size.
            let (w, h) = Self.turned(state) ? (setting.size.height, setting.size.width) : (setting.size.width, setting.size.height)
            let even = { (f: FormatOption) in f.width & ~1 == w && f.height & ~1 == h }
            guard let sized = session.camera.formats.filter(even).first else {
                throw SOAPFault(.sender, [QName(ONVIFNamespace.error, "InvalidArgVal"), QName(ONVIFNamespace.error, "ConfigModify")],
                                "Resolution \(setting.size.width)x\(setting.size.height) is not one of the camera's.")
            }
            let keep = state.format.map { current in session.camera.formats.contains { even($0) && $0.pixelFormat == current.pixelFormat } } ?? false
            do {
                try await cameras.prepare(session, PrepareRequest(width: sized.width, height: sized.height, fps: setting.fps,
                                                                  pixelFormat: keep ? state.format?.pixelFormat : nil))
            } catch {
                throw SOAPFault(.receiver, [QName(ONVIFNamespace.error, "Action"), QName(ONVIFNamespace.error, "ConfigurationConflict")],
                                "The camera did not take \(setting.size.width)x\(setting.size.height) at \(setting.fps) fps: \(error)")
            }
        }
        if setting.bitrate != now.bitrate {
            let cap = LiveRequest.Cap.kbits(setting.bitrate)
            _ = await session.setLive(name == .main ? LiveRequest(main: cap) : LiveRequest(sub: cap))
        }
    }
}
