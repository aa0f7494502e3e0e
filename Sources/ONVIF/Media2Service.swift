// The media service, version 2 (ONVIF Media2, ver20, /onvif/media2_service): the same profiles,
// configurations and streams as Media ver10 (MediaService), in Media2's shapes — a profile's
// configurations only when a Type asks for them, stream URIs by protocol name, an encoder's
// GovLength and H.264 profile as attributes, its options one entry per encoding. NVRs that
// know Media2 (and H.265-era clients) ask it first; what it sets is what ver10 sets.

import SOAP

enum Media2Service {
    static func operations(_ device: any ONVIFDevice) -> [String: Operation] {
        /// The profiles a request narrows to (ConfigurationToken, else ProfileToken, else all).
        @Sendable func narrowed(_ r: XMLElement, _ c: ONVIFContext, configuration: (MediaProfile) -> String) async throws(SOAPFault) -> [MediaProfile] {
            let all = await device.profiles(c)
            if let token = r.child("ConfigurationToken")?.trimmedText {
                let found = all.filter { configuration($0) == token }
                guard !found.isEmpty else { throw invalidArgument("NoConfig", "No configuration '\(token)'.") }
                return found
            }
            if let token = r.child("ProfileToken")?.trimmedText {
                guard let p = all.first(where: { $0.token == token }) else {
                    throw invalidArgument("NoProfile", "No profile '\(token)' (GetProfiles lists them).")
                }
                return [p]
            }
            return all
        }
        return [
            "GetServiceCapabilities": Operation(access: .preAuth) { _, _ in tr2("GetServiceCapabilitiesResponse", [capabilities()]) },
            "GetProfiles": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let all = await device.profiles(c)
                var chosen = all
                if let token = r.child("Token")?.trimmedText {
                    chosen = all.filter { $0.token == token }
                    guard !chosen.isEmpty else { throw invalidArgument("NoProfile", "No profile '\(token)' (GetProfiles lists them).") }
                }
                let types = Set(r.children("Type").map(\.trimmedText))
                return tr2("GetProfilesResponse", chosen.map { profile($0, types: types, among: all) })
            },
            "GetStreamUri": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let p = try await MediaService.profile(device, r, c)
                let proto = r.child("Protocol")?.trimmedText ?? ""
                // RtspUnicast: RTP over UDP or interleaved in RTSP's TCP, as the client chooses at
                // SETUP; RtspOverHttp: the same URI, tunnelled in HTTP on the RTSP port.
                guard ["RtspUnicast", "RTSP", "RtspOverHttp"].contains(proto) else {
                    throw invalidArgument("InvalidStreamSetup", "Streams are RtspUnicast (RTP over UDP or RTSP's TCP) or RtspOverHttp, not '\(proto)'.")
                }
                return tr2("GetStreamUriResponse", [XMLElement(ONVIFNamespace.media2, "Uri", text: p.streamURI)])
            },
            "GetSnapshotUri": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let p = try await MediaService.profile(device, r, c)
                return tr2("GetSnapshotUriResponse", [XMLElement(ONVIFNamespace.media2, "Uri", text: p.snapshotURI)])
            },
            "GetVideoSourceConfigurations": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let all = await device.profiles(c)
                var seen = Set<String>()
                let sources = try await narrowed(r, c) { $0.source }.filter { seen.insert($0.source).inserted }
                return tr2("GetVideoSourceConfigurationsResponse", sources.map { p in
                    MediaService.sourceConfiguration(p, as: "Configurations", ns: ONVIFNamespace.media2, useCount: all.count { $0.source == p.source })
                })
            },
            "GetVideoEncoderConfigurations": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                tr2("GetVideoEncoderConfigurationsResponse", try await narrowed(r, c) { $0.token }.map {
                    encoder($0, as: QName(ONVIFNamespace.media2, "Configurations"))
                })
            },
            "GetAudioSourceConfigurations": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let all = await device.profiles(c)
                var seen = Set<String>()
                let mics = try await narrowed(r, c) { $0.audio?.source ?? "" }.compactMap(\.audio).filter { seen.insert($0.source).inserted }
                return tr2("GetAudioSourceConfigurationsResponse", mics.map { a in
                    MediaService.audioSourceConfiguration(a, as: QName(ONVIFNamespace.media2, "Configurations"), useCount: all.count { $0.audio?.source == a.source })
                })
            },
            "GetAudioEncoderConfigurations": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let all = await device.profiles(c)
                var seen = Set<String>()
                let mics = try await narrowed(r, c) { $0.audio?.encoderToken ?? "" }.compactMap(\.audio).filter { seen.insert($0.source).inserted }
                return tr2("GetAudioEncoderConfigurationsResponse", mics.map { a in
                    audioEncoder(a, as: QName(ONVIFNamespace.media2, "Configurations"), useCount: all.count { $0.audio?.source == a.source })
                })
            },
            "GetVideoEncoderConfigurationOptions": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                guard let p = try await narrowed(r, c, configuration: { $0.token }).first, let o = await device.encoderOptions(p.token) else {
                    throw invalidArgument("NoConfig", "This device has no video encoder configuration.")
                }
                return tr2("GetVideoEncoderConfigurationOptionsResponse", [options(o)])
            },
            "SetVideoEncoderConfiguration": Operation(access: .operate) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                guard let config = r.child("Configuration") else { throw invalidArgument("ConfigModify", "A Configuration is required.") }
                let token = config.attribute("token") ?? ""
                guard let p = await device.profiles(c).first(where: { $0.token == token }), let o = await device.encoderOptions(token) else {
                    throw invalidArgument("NoConfig", "No video encoder configuration '\(token)' (GetVideoEncoderConfigurations lists them).")
                }
                try await device.setEncoder(token, try MediaService.setting(config, of: p, within: o))
                return tr2("SetVideoEncoderConfigurationResponse", [])
            },
        ]
    }

    static func tr2(_ name: String, _ children: [XMLElement]) -> XMLElement { XMLElement(ONVIFNamespace.media2, name, children) }

    /// A profile as Media2 writes it: its configurations only for the Types asked ("All", or
    /// "VideoSource", "VideoEncoder", "PTZ").
    static func profile(_ p: MediaProfile, types: Set<String>, among others: [MediaProfile]) -> XMLElement {
        let (sharing, hearing) = MediaService.uses(p, among: others)
        let all = types.contains("All")
        var configurations: [XMLElement] = []
        if all || types.contains("VideoSource") {
            configurations.append(MediaService.sourceConfiguration(p, as: "VideoSource", ns: ONVIFNamespace.media2, useCount: sharing))
        }
        if let a = p.audio, all || types.contains("AudioSource") {
            configurations.append(MediaService.audioSourceConfiguration(a, as: QName(ONVIFNamespace.media2, "AudioSource"), useCount: hearing))
        }
        if all || types.contains("VideoEncoder") { configurations.append(encoder(p, as: QName(ONVIFNamespace.media2, "VideoEncoder"))) }
        if let a = p.audio, all || types.contains("AudioEncoder") {
            configurations.append(audioEncoder(a, as: QName(ONVIFNamespace.media2, "AudioEncoder"), useCount: hearing))
        }
        if all || types.contains("PTZ") { configurations.append(PTZService.configuration(p.source, as: QName(ONVIFNamespace.media2, "PTZ"))) }
        var children = [XMLElement(ONVIFNamespace.media2, "Name", text: p.name)]
        if !configurations.isEmpty { children.append(tr2("Configurations", configurations)) }
        return XMLElement(ONVIFNamespace.media2, "Profiles", children).withAttribute("token", p.token).withAttribute("fixed", "true")
    }

    /// An encoder configuration in Media2's shape (tt:VideoEncoder2Configuration).
    static func encoder(_ p: MediaProfile, as name: QName) -> XMLElement {
        var attributes = [QName("", "token"): p.token]
        if p.encoding == .h264 { attributes[QName("", "GovLength")] = String(p.govLength); attributes[QName("", "Profile")] = p.h264Profile }
        return XMLElement(name, attributes: attributes, children: [
            tt("Name", p.token), tt("UseCount", 1), tt("Encoding", p.encoding.rawValue),
            tt("Resolution", [tt("Width", p.width), tt("Height", p.height)]),
            tt("RateControl", [tt("FrameRateLimit", "\(p.fps).0"), tt("BitrateLimit", p.bitrate)]).withAttribute("ConstantBitRate", "false"),
            tt("Quality", "\(p.quality).0"),
        ])
    }

    /// The microphone's AAC encode in Media2's shape (tt:AudioEncoder2Configuration): its
    /// encoding as RTP names it (RFC 3640), SampleRate in kHz, Bitrate in kbit/s.
    static func audioEncoder(_ a: AudioProfile, as name: QName, useCount: Int) -> XMLElement {
        XMLElement(name, attributes: [QName("", "token"): a.encoderToken], children: [
            tt("Name", a.encoderToken), tt("UseCount", useCount), tt("Encoding", "MPEG4-GENERIC"),
            tt("Bitrate", a.bitrate), tt("SampleRate", a.sampleRate / 1000),
        ])
    }

    /// An encoder's options in Media2's shape: the profile's one encoding, its lists as attributes.
    static func options(_ o: EncoderOptions) -> XMLElement {
        let rates = Array(o.fps).filter { [1, 2, 5, 10, 15, 20, 25, 30, 50, 60, 120].contains($0) || $0 == o.fps.lowerBound || $0 == o.fps.upperBound }
        var attributes = ["FrameRatesSupported": rates.map { "\($0).0" }.joined(separator: " "), "ConstantBitRateSupported": "false"]
        if o.encoding == .h264 {
            attributes["GovLengthRange"] = "\(o.govLength.lowerBound) \(o.govLength.upperBound)"
            attributes["ProfilesSupported"] = o.h264Profiles.joined(separator: " ")
        }
        return XMLElement(ONVIFNamespace.media2, "Options", attributes: attributes,
                          [tt("Encoding", o.encoding.rawValue), tt("QualityRange", [tt("Min", "\(o.quality.lowerBound).0"), tt("Max", "\(o.quality.upperBound).0")])]
            + o.resolutions.map { tt("ResolutionsAvailable", [tt("Width", $0.width), tt("Height", $0.height)]) }
            + [tt("BitrateRange", [tt("Min", o.bitrate.lowerBound), tt("Max", o.bitrate.upperBound)])])
    }

    static func capabilities() -> XMLElement {
        XMLElement(ONVIFNamespace.media2, "Capabilities", attributes: ["SnapshotUri": "true", "Rotation": "false", "VideoSourceMode": "false", "OSD": "false"], [
            XMLElement(ONVIFNamespace.media2, "ProfileCapabilities", attributes: ["MaximumNumberOfProfiles": "16", "ConfigurationsSupported": "VideoSource VideoEncoder AudioSource AudioEncoder PTZ"]),
            XMLElement(ONVIFNamespace.media2, "StreamingCapabilities", attributes: ["RTSPStreaming": "true", "RTPMulticast": "false", "RTP_RTSP_TCP": "true"]),
        ])
    }
}
