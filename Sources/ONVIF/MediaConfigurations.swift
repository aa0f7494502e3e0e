// Media ver10's configurations: each camera's video source configuration and each profile's
// encoder configuration by token, what an encoder can be set to, and SetVideoEncoderConfiguration.
// What NVRs (Blue Iris, Synology, UniFi) read before they record, and what they set to pick a
// stream's size, rate and bitrate. A value outside the options, or one this device does not
// let a client choose (Quality, GovLength, the H.264 profile), is a fault naming it, with
// nothing changed; what the camera took is what the next Get reads back.

import SOAP

extension MediaService {
    static func configurationOperations(_ device: any ONVIFDevice) -> [String: Operation] {
        @Sendable func encoder(_ r: XMLElement, _ c: ONVIFContext) async throws(SOAPFault) -> MediaProfile {
            let token = r.child("ConfigurationToken")?.trimmedText ?? ""
            guard let p = await device.profiles(c).first(where: { $0.token == token }) else {
                throw invalidArgument("NoConfig", "No video encoder configuration '\(token)' (GetVideoEncoderConfigurations lists them).")
            }
            return p
        }
        @Sendable func sources(_ c: ONVIFContext) async -> [(MediaProfile, Int)] {
            let all = await device.profiles(c)
            var seen = Set<String>()
            return all.filter { seen.insert($0.source).inserted }.map { p in (p, all.count { $0.source == p.source }) }
        }
        @Sendable func source(_ r: XMLElement, _ c: ONVIFContext) async throws(SOAPFault) -> (MediaProfile, Int) {
            let token = r.child("ConfigurationToken")?.trimmedText ?? ""
            guard let s = await sources(c).first(where: { $0.0.source == token }) else {
                throw invalidArgument("NoConfig", "No video source configuration '\(token)' (GetVideoSourceConfigurations lists them).")
            }
            return s
        }
        let encoderName = QName(ONVIFNamespace.media, "Configurations")
        return [
            "GetVideoSourceConfigurations": Operation(access: .read) { _, c in
                trt("GetVideoSourceConfigurationsResponse", await sources(c).map { sourceConfiguration($0.0, as: "Configurations", ns: ONVIFNamespace.media, useCount: $0.1) })
            },
            "GetVideoSourceConfiguration": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let (p, uses) = try await source(r, c)
                return trt("GetVideoSourceConfigurationResponse", [sourceConfiguration(p, as: "Configuration", ns: ONVIFNamespace.media, useCount: uses)])
            },
            "GetCompatibleVideoSourceConfigurations": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let p = try await profile(device, r, c)  // a profile is fixed to its camera
                let uses = await device.profiles(c).count { $0.source == p.source }
                return trt("GetCompatibleVideoSourceConfigurationsResponse", [sourceConfiguration(p, as: "Configurations", ns: ONVIFNamespace.media, useCount: uses)])
            },
            "GetVideoEncoderConfigurations": Operation(access: .read) { _, c in
                trt("GetVideoEncoderConfigurationsResponse", await device.profiles(c).map { encoderConfiguration($0, as: encoderName) })
            },
            "GetVideoEncoderConfiguration": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                trt("GetVideoEncoderConfigurationResponse", [encoderConfiguration(try await encoder(r, c), as: QName(ONVIFNamespace.media, "Configuration"))])
            },
            "GetCompatibleVideoEncoderConfigurations": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                trt("GetCompatibleVideoEncoderConfigurationsResponse", [encoderConfiguration(try await profile(device, r, c), as: encoderName)])
            },
            "GetGuaranteedNumberOfVideoEncoderInstances": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let (p, uses) = try await source(r, c)
                let own = await device.profiles(c).filter { $0.source == p.source }
                let jpeg = own.count { $0.encoding == .jpeg }
                return trt("GetGuaranteedNumberOfVideoEncoderInstancesResponse",
                           [trt("TotalNumber", uses)] + (jpeg > 0 ? [trt("JPEG", jpeg)] : []) + [trt("H264", uses - jpeg)])
            },
            "GetVideoEncoderConfigurationOptions": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                // Either token narrows it; neither: the first profile's (every stream is H.264).
                let p: MediaProfile
                if r.child("ConfigurationToken") != nil { p = try await encoder(r, c) }
                else if r.child("ProfileToken") != nil { p = try await profile(device, r, c) }
                else if let first = await device.profiles(c).first { p = first }
                else { throw invalidArgument("NoConfig", "This device has no video encoder configuration.") }
                guard let o = await device.encoderOptions(p.token) else {
                    throw invalidArgument("NoConfig", "No video encoder configuration '\(p.token)'.")
                }
                return trt("GetVideoEncoderConfigurationOptionsResponse", [options(o)])
            },
            "SetVideoEncoderConfiguration": Operation(access: .operate) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                guard let config = r.child("Configuration") else { throw invalidArgument("ConfigModify", "A Configuration is required.") }
                let token = config.attribute("token") ?? ""
                guard let p = await device.profiles(c).first(where: { $0.token == token }),
                      let o = await device.encoderOptions(token) else {
                    throw invalidArgument("NoConfig", "No video encoder configuration '\(token)' (GetVideoEncoderConfigurations lists them).")
                }
                try await device.setEncoder(token, try setting(config, of: p, within: o))
                return trt("SetVideoEncoderConfigurationResponse", [])
            },
        ]
    }

    static func trt(_ name: String, _ value: Int) -> XMLElement { XMLElement(ONVIFNamespace.media, name, text: String(value)) }

    /// What a SetVideoEncoderConfiguration's Configuration asks, checked against the options;
    /// what it leaves out stays as the profile has it.
    static func setting(_ config: XMLElement, of p: MediaProfile, within o: EncoderOptions) throws(SOAPFault) -> EncoderSetting {
        func int(_ path: String...) throws(SOAPFault) -> Int? {
            guard let text = config[path]?.trimmedText else { return nil }
            // Clients write integers; some write a float Quality ("5.000000").
            guard let v = Double(text), v.isFinite, v == v.rounded(), abs(v) < 1e9 else {
                throw refused("\(path.joined(separator: "/")) '\(text)' is not a whole number.")
            }
            return Int(v)
        }
        if let encoding = config.child("Encoding")?.trimmedText, encoding != p.encoding.rawValue {
            throw refused("Encoding \(encoding): this profile's stream is \(p.encoding.rawValue).")
        }
        if let quality = try int("Quality"), !o.quality.contains(quality) {
            throw refused(p.encoding == .h264 ? "Quality \(quality): a stream's quality follows its BitrateLimit here; Quality stays \(fixedQuality)."
                                              : "Quality \(quality) is outside \(o.quality.lowerBound)…\(o.quality.upperBound).")
        }
        let size = PictureSize(width: try int("Resolution", "Width") ?? p.width, height: try int("Resolution", "Height") ?? p.height)
        guard o.resolutions.contains(size) else {
            throw refused("Resolution \(size.width)x\(size.height) is not offered (\(o.resolutions.map { "\($0.width)x\($0.height)" }.joined(separator: ", "))).")
        }
        let fps = try int("RateControl", "FrameRateLimit") ?? p.fps
        guard o.fps.contains(fps) else { throw refused("FrameRateLimit \(fps) is outside \(o.fps.lowerBound)…\(o.fps.upperBound).") }
        if let interval = try int("RateControl", "EncodingInterval"), interval != 1 {
            throw refused("EncodingInterval \(interval): every frame of the rate is encoded (1).")
        }
        let bitrate = try int("RateControl", "BitrateLimit") ?? p.bitrate
        guard o.bitrate.contains(bitrate) else {
            throw refused("BitrateLimit \(bitrate) is outside \(o.bitrate.lowerBound)…\(o.bitrate.upperBound) kbit/s.")
        }
        guard p.encoding == .h264 else { return EncoderSetting(size: size, fps: fps, bitrate: bitrate) }
        // ver10 has them in an H264 element, Media2 as the configuration's attributes.
        var gov = try int("H264", "GovLength")
        if gov == nil, let text = config.attribute("GovLength") {
            guard let v = Int(text.trimmingCharacters(in: [" ", "\t", "\n", "\r"])) else { throw refused("GovLength '\(text)' is not a whole number.") }
            gov = v
        }
        if let gov, !o.govLength.contains(gov) {
            throw refused("GovLength \(gov): keyframes come every \(p.govLength) frames (live.keyframeInterval in config.json).")
        }
        if let profile = config["H264", "H264Profile"]?.trimmedText ?? config.attribute("Profile"), !o.h264Profiles.contains(profile) {
            throw refused("H264Profile \(profile): this stream is \(o.h264Profiles.joined(separator: ", ")).")
        }
        return EncoderSetting(size: size, fps: fps, bitrate: bitrate)
    }

    static func refused(_ reason: String) -> SOAPFault { invalidArgument("ConfigModify", reason) }

    /// GetVideoEncoderConfigurationOptions' answer: the profile's one encoding (H264 or JPEG),
    /// its bitrates in the extension.
    static func options(_ o: EncoderOptions) -> XMLElement {
        func range(_ name: String, _ r: ClosedRange<Int>) -> XMLElement { tt(name, [tt("Min", r.lowerBound), tt("Max", r.upperBound)]) }
        let sizes = o.resolutions.map { tt("ResolutionsAvailable", [tt("Width", $0.width), tt("Height", $0.height)]) }
        let name = o.encoding.rawValue
        let own = o.encoding == .h264
            ? sizes + [range("GovLengthRange", o.govLength), range("FrameRateRange", o.fps), range("EncodingIntervalRange", 1...1)]
                + o.h264Profiles.map { tt("H264ProfilesSupported", $0) }
            : sizes + [range("FrameRateRange", o.fps), range("EncodingIntervalRange", 1...1)]
        return trt("Options", [
            range("QualityRange", o.quality),
            tt(name, own),
            tt("Extension", [tt(name, own + [range("BitrateRange", o.bitrate)])]),
        ])
    }
}
