// Media ver10's sound: each camera's microphone, while it runs, as an audio source and one AAC
// encoder configuration shared by the camera's two profiles — the sound the profiles' RTSP
// streams carry (RFC 3640's AAC). A camera without one lists none; nothing here is settable:
// the microphone's rate and channels are the device's, its bitrate the encoder's default.

import SOAP

extension MediaService {
    static func audioOperations(_ device: any ONVIFDevice) -> [String: Operation] {
        /// Each microphone once, with how many profiles use it.
        @Sendable func microphones(_ c: ONVIFContext) async -> [(AudioProfile, Int)] {
            let all = await device.profiles(c)
            var seen = Set<String>()
            return all.compactMap(\.audio).filter { seen.insert($0.source).inserted }.map { a in (a, all.count { $0.audio?.source == a.source }) }
        }
        @Sendable func named(_ r: XMLElement, _ c: ONVIFContext, by token: (AudioProfile) -> String) async throws(SOAPFault) -> (AudioProfile, Int) {
            let wanted = r.child("ConfigurationToken")?.trimmedText ?? ""
            guard let found = await microphones(c).first(where: { token($0.0) == wanted }) else {
                throw invalidArgument("NoConfig", "No audio configuration '\(wanted)' (a camera's microphone that runs has one).")
            }
            return found
        }
        @Sendable func ofProfile(_ r: XMLElement, _ c: ONVIFContext) async throws(SOAPFault) -> [(AudioProfile, Int)] {
            let p = try await profile(device, r, c)
            guard let a = p.audio else { return [] }
            return [(a, await device.profiles(c).count { $0.audio?.source == a.source })]
        }
        @Sendable func source(_ a: AudioProfile, _ uses: Int, _ name: String) -> XMLElement {
            audioSourceConfiguration(a, as: QName(ONVIFNamespace.media, name), useCount: uses)
        }
        @Sendable func encoder(_ a: AudioProfile, _ uses: Int, _ name: String) -> XMLElement {
            audioEncoderConfiguration(a, as: QName(ONVIFNamespace.media, name), useCount: uses)
        }
        return [
            "GetAudioSources": Operation(access: .read) { _, c in
                trt("GetAudioSourcesResponse", await microphones(c).map { a, _ in
                    trt("AudioSources", [tt("Channels", a.channels)]).withAttribute("token", a.source)
                })
            },
            "GetAudioSourceConfigurations": Operation(access: .read) { _, c in
                trt("GetAudioSourceConfigurationsResponse", await microphones(c).map { source($0.0, $0.1, "Configurations") })
            },
            "GetAudioSourceConfiguration": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let (a, uses) = try await named(r, c) { $0.source }
                return trt("GetAudioSourceConfigurationResponse", [source(a, uses, "Configuration")])
            },
            "GetCompatibleAudioSourceConfigurations": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                trt("GetCompatibleAudioSourceConfigurationsResponse", try await ofProfile(r, c).map { source($0.0, $0.1, "Configurations") })
            },
            "GetAudioEncoderConfigurations": Operation(access: .read) { _, c in
                trt("GetAudioEncoderConfigurationsResponse", await microphones(c).map { encoder($0.0, $0.1, "Configurations") })
            },
            "GetAudioEncoderConfiguration": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let (a, uses) = try await named(r, c) { $0.encoderToken }
                return trt("GetAudioEncoderConfigurationResponse", [encoder(a, uses, "Configuration")])
            },
            "GetCompatibleAudioEncoderConfigurations": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                trt("GetCompatibleAudioEncoderConfigurationsResponse", try await ofProfile(r, c).map { encoder($0.0, $0.1, "Configurations") })
            },
        ]
    }
}
