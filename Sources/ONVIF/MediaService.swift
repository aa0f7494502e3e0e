// The media service (ONVIF Media, ver10, /onvif/media_service): a profile per stream of each
// camera — its main and sub H.264 streams — with where to play it (RTSP) and where to take a
// still (the camera's snapshot URL). Profiles are fixed: they follow the configuration.

import SOAP

enum MediaService {
    static func operations(_ device: any ONVIFDevice) -> [String: Operation] {
        return configurationOperations(device).merging(audioOperations(device)) { own, _ in own }.merging([
            "GetServiceCapabilities": Operation(access: .preAuth) { _, _ in trt("GetServiceCapabilitiesResponse", [serviceCapabilities()]) },
            "GetProfiles": Operation(access: .read) { _, c in
                let all = await device.profiles(c)
                return trt("GetProfilesResponse", all.map { describe($0, as: "Profiles", among: all) })
            },
            "GetProfile": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let p = try await profile(device, r, c)
                return trt("GetProfileResponse", [describe(p, as: "Profile", among: await device.profiles(c))])
            },
            "GetStreamUri": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let p = try await profile(device, r, c)
                let stream = r["StreamSetup", "Stream"]?.trimmedText ?? "RTP-Unicast"
                let transport = r["StreamSetup", "Transport", "Protocol"]?.trimmedText ?? "RTSP"
                guard stream == "RTP-Unicast" else {
                    throw invalidArgument("InvalidStreamSetup", "Only RTP-Unicast is offered, not \(stream).")
                }
                // HTTP: RTSP tunnelled in HTTP (gst-rtsp-server takes the tunnel on the RTSP port, so
                // the same URI serves; ffmpeg's -rtsp_transport http, VLC's --rtsp-http).
                guard ["RTSP", "TCP", "UDP", "HTTP"].contains(transport) else {
                    throw invalidArgument("InvalidStreamSetup", "Streams are RTSP (over UDP, TCP or tunnelled in HTTP), not \(transport).")
                }
                return trt("GetStreamUriResponse", [uri(p.streamURI)])
            },
            "GetSnapshotUri": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                trt("GetSnapshotUriResponse", [uri(try await profile(device, r, c).snapshotURI)])
            },
            "GetVideoSources": Operation(access: .read) { _, c in
                var seen = Set<String>()
                let sources = await device.profiles(c).filter { seen.insert($0.source).inserted }
                return trt("GetVideoSourcesResponse", sources.map { p in
                    trt("VideoSources", [tt("Framerate", p.fps), tt("Resolution", [tt("Width", p.width), tt("Height", p.height)])])
                        .withAttribute("token", p.source)
                })
            },
        ]) { own, _ in own }
    }

    static func trt(_ name: String, _ children: [XMLElement]) -> XMLElement { XMLElement(ONVIFNamespace.media, name, children) }

    /// The profile a request's ProfileToken names.
    static func profile(_ device: any ONVIFDevice, _ request: XMLElement, _ c: ONVIFContext) async throws(SOAPFault) -> MediaProfile {
        guard let token = request.child("ProfileToken")?.trimmedText, !token.isEmpty else {
            throw invalidArgument("NoProfile", "A ProfileToken is required.")
        }
        guard let p = await device.profiles(c).first(where: { $0.token == token }) else {
            throw invalidArgument("NoProfile", "No profile '\(token)' (GetProfiles lists them).")
        }
        return p
    }

    static func uri(_ u: String) -> XMLElement {
        XMLElement(ONVIFNamespace.media, "MediaUri", [tt("Uri", u), tt("InvalidAfterConnect", false), tt("InvalidAfterReboot", false), tt("Timeout", "PT0S")])
    }

    /// A profile as GetProfiles writes it (`Profiles`) or GetProfile (`Profile`).
    static func describe(_ p: MediaProfile, as name: String, among all: [MediaProfile]) -> XMLElement {
        let (video, audio) = uses(p, among: all)
        // tt:Profile's order: the sources, then the encoders, then PTZ.
        var children = [tt("Name", p.name), sourceConfiguration(p, as: "VideoSourceConfiguration", useCount: video)]
        if let a = p.audio { children.append(audioSourceConfiguration(a, as: QName(ONVIFNamespace.schema, "AudioSourceConfiguration"), useCount: audio)) }
        children.append(encoderConfiguration(p, as: QName(ONVIFNamespace.schema, "VideoEncoderConfiguration")))
        if let a = p.audio { children.append(audioEncoderConfiguration(a, as: QName(ONVIFNamespace.schema, "AudioEncoderConfiguration"), useCount: audio)) }
        children.append(PTZService.configuration(p.source, as: QName(ONVIFNamespace.schema, "PTZConfiguration")))
        return XMLElement(ONVIFNamespace.media, name, children).withAttribute("token", p.token).withAttribute("fixed", "true")
    }

    /// How many profiles use the profile's video source, and its microphone.
    static func uses(_ p: MediaProfile, among all: [MediaProfile]) -> (video: Int, audio: Int) {
        (all.count { $0.source == p.source }, p.audio.map { a in all.count { $0.audio?.source == a.source } } ?? 0)
    }

    /// A microphone's source configuration: the whole of its sound.
    static func audioSourceConfiguration(_ a: AudioProfile, as name: QName, useCount: Int) -> XMLElement {
        XMLElement(name, attributes: [QName("", "token"): a.source], children: [tt("Name", a.source), tt("UseCount", useCount), tt("SourceToken", a.source)])
    }

    /// Its AAC encode as ver10 names it (SampleRate in kHz, Bitrate in kbit/s).
    static func audioEncoderConfiguration(_ a: AudioProfile, as name: QName, useCount: Int) -> XMLElement {
        XMLElement(name, attributes: [QName("", "token"): a.encoderToken], children: [
            tt("Name", a.encoderToken), tt("UseCount", useCount), tt("Encoding", "AAC"), tt("Bitrate", a.bitrate),
            tt("SampleRate", a.sampleRate / 1000),
            tt("Multicast", [tt("Address", [tt("Type", "IPv4"), tt("IPv4Address", "0.0.0.0")]), tt("Port", 0), tt("TTL", 1), tt("AutoStart", false)]),
            tt("SessionTimeout", "PT60S"),
        ])
    }

    /// The profile's video source configuration: the whole picture of its camera (one per
    /// camera, its token the camera's, used by each of the camera's profiles).
    static func sourceConfiguration(_ p: MediaProfile, as name: String, ns: String = ONVIFNamespace.schema, useCount: Int) -> XMLElement {
        XMLElement(ns, name, [
            tt("Name", p.source), tt("UseCount", useCount), tt("SourceToken", p.source),
            tt("Bounds", attributes: ["x": "0", "y": "0", "width": String(p.width), "height": String(p.height)]),
        ]).withAttribute("token", p.source)
    }

    /// The profile's encoder configuration (its token the profile's: one stream, one profile).
    static func encoderConfiguration(_ p: MediaProfile, as name: QName) -> XMLElement {
        XMLElement(name, children: [
            tt("Name", p.token), tt("UseCount", 1), tt("Encoding", p.encoding.rawValue),
            tt("Resolution", [tt("Width", p.width), tt("Height", p.height)]),
            tt("Quality", p.quality),
            tt("RateControl", [tt("FrameRateLimit", p.fps), tt("EncodingInterval", 1), tt("BitrateLimit", p.bitrate)]),
        ] + (p.encoding == .h264 ? [tt("H264", [tt("GovLength", p.govLength), tt("H264Profile", p.h264Profile)])] : []) + [
            tt("Multicast", [tt("Address", [tt("Type", "IPv4"), tt("IPv4Address", "0.0.0.0")]), tt("Port", 0), tt("TTL", 1), tt("AutoStart", false)]),
            tt("SessionTimeout", "PT60S"),
        ]).withAttribute("token", p.token)
    }

    /// ONVIF's relative Quality has no meaning for a stream whose bitrate cap sets its quality:
    /// an H.264 stream reports the middle of 0…10 and takes only that.
    static let fixedQuality = 5

    static func serviceCapabilities() -> XMLElement {
        XMLElement(ONVIFNamespace.media, "Capabilities", attributes: ["SnapshotUri": "true", "Rotation": "false", "VideoSourceMode": "false", "OSD": "false"], [
            XMLElement(ONVIFNamespace.media, "ProfileCapabilities", attributes: ["MaximumNumberOfProfiles": "16"]),
            XMLElement(ONVIFNamespace.media, "StreamingCapabilities", attributes: ["RTPMulticast": "false", "RTP_TCP": "true", "RTP_RTSP_TCP": "true"]),
        ])
    }
}
