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
        var ops: [String: Operation] = [
            "GetAudioSources": Operation(access: .read) { _, c in
                trt("GetAudioSourcesResponse", await microphones(c).map { a, _ in
                    trt("AudioSources", [tt("Channels", a.channels)]).withAttribute("token", a.source)
                })
            },
        ]
        // The source's and the encoder's configurations: all, one by its token, a profile's.
        let kinds: [(String, @Sendable (AudioProfile) -> String, @Sendable (AudioProfile, Int, String) -> XMLElement)] = [
            ("Source", { $0.source }, source), ("Encoder", { $0.encoderToken }, encoder),
        ]
        for (kind, token, build) in kinds {
            ops["GetAudio\(kind)Configurations"] = Operation(access: .read) { _, c in
                trt("GetAudio\(kind)ConfigurationsResponse", await microphones(c).map { build($0.0, $0.1, "Configurations") })
            }
            ops["GetAudio\(kind)Configuration"] = Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let (a, uses) = try await named(r, c, by: token)
                return trt("GetAudio\(kind)ConfigurationResponse", [build(a, uses, "Configuration")])
            }
            ops["GetCompatibleAudio\(kind)Configurations"] = Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                trt("GetCompatibleAudio\(kind)ConfigurationsResponse", try await ofProfile(r, c).map { build($0.0, $0.1, "Configurations") })
            }
        }
        return ops
    }
}
