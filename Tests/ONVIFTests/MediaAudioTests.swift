// A camera's microphone as ONVIF's media services list it: an audio source and one AAC encoder
// configuration in each of the camera's profiles (ver10 and Media2), none for a camera
// without one.

import ONVIF
import SOAP
import Testing

@Suite struct MediaAudioTests {
    let device = TwoCameras()

    @Test func profilesCarryTheMicrophoneTheirStreamsCarry() async throws {
        let media = SignedCaller(device, ["m": ONVIFNamespace.media])
        let (_, profiles) = try await media.call("<m:GetProfiles/>")
        let list = profiles.children("Profiles")
        let rear = try #require(list.first)
        #expect(rear["AudioSourceConfiguration", "SourceToken"]?.text == "rear_mic")
        #expect(rear["AudioEncoderConfiguration", "Encoding"]?.text == "AAC" && rear["AudioEncoderConfiguration", "SampleRate"]?.text == "48"
                && rear["AudioEncoderConfiguration", "Bitrate"]?.text == "64")
        #expect(rear["AudioEncoderConfiguration"]?.attribute("token") == "rear_mic_aac" && rear["AudioEncoderConfiguration", "UseCount"]?.text == "2")
        // tt:Profile's order: video source, audio source, video encoder, audio encoder, PTZ.
        #expect(rear.children.map(\.name.local) == ["Name", "VideoSourceConfiguration", "AudioSourceConfiguration", "VideoEncoderConfiguration",
                                                    "AudioEncoderConfiguration", "PTZConfiguration"])
        #expect(list[2]["AudioEncoderConfiguration"] == nil && list[2]["AudioSourceConfiguration"] == nil, "the front camera has no microphone")

        let (_, sources) = try await media.call("<m:GetAudioSources/>")
        #expect(sources.children("AudioSources").compactMap { $0.attribute("token") } == ["rear_mic"])
        #expect(sources["AudioSources", "Channels"]?.text == "1")
        let (_, encoders) = try await media.call("<m:GetAudioEncoderConfigurations/>")
        #expect(encoders.children("Configurations").compactMap { $0.attribute("token") } == ["rear_mic_aac"])
        let (_, one) = try await media.call("<m:GetAudioEncoderConfiguration><m:ConfigurationToken>rear_mic_aac</m:ConfigurationToken></m:GetAudioEncoderConfiguration>")
        #expect(one["Configuration", "Encoding"]?.text == "AAC")
        let (_, none) = try await media.call("<m:GetCompatibleAudioEncoderConfigurations><m:ProfileToken>front_sub</m:ProfileToken></m:GetCompatibleAudioEncoderConfigurations>")
        #expect(none.children.isEmpty)
        let (status, fault) = try await media.call("<m:GetAudioSourceConfiguration><m:ConfigurationToken>front_mic</m:ConfigurationToken></m:GetAudioSourceConfiguration>")
        #expect(status == 400 && SignedCaller.subcode(fault) == "NoConfig")
    }

    @Test func media2ListsItByType() async throws {
        let media2 = SignedCaller(device, ["m": ONVIFNamespace.media2])
        let (_, all) = try await media2.call("<m:GetProfiles><m:Token>rear_sub</m:Token><m:Type>All</m:Type></m:GetProfiles>")
        let configurations = try #require(all["Profiles", "Configurations"])
        #expect(configurations.children.map(\.name.local) == ["VideoSource", "AudioSource", "VideoEncoder", "AudioEncoder", "PTZ"])
        #expect(configurations["AudioEncoder", "Encoding"]?.text == "MPEG4-GENERIC" && configurations["AudioEncoder", "SampleRate"]?.text == "48")
        let (_, video) = try await media2.call("<m:GetProfiles><m:Token>rear_sub</m:Token><m:Type>VideoEncoder</m:Type></m:GetProfiles>")
        #expect(video["Profiles", "Configurations"]?.children.map(\.name.local) == ["VideoEncoder"])
        let (_, encoders) = try await media2.call("<m:GetAudioEncoderConfigurations><m:ProfileToken>front_main</m:ProfileToken></m:GetAudioEncoderConfigurations>")
        #expect(encoders.children.isEmpty, "the front camera has none")
    }
}
