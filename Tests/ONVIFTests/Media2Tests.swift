// Media2 as a client that knows it sees the device: the same profiles as ver10 with their
// configurations only when asked, stream URIs by protocol, encoders with GovLength and Profile
// as attributes, and a SetVideoEncoderConfiguration that reaches the same streams.

import ONVIF
import SOAP
import Testing

@Suite struct Media2Tests {
    let device = TwoCameras()
    let caller: SignedCaller

    init() { caller = SignedCaller(device, ["m": ONVIFNamespace.media2, "t": ONVIFNamespace.schema]) }

    func call(_ body: String, user: String = "operator") async throws -> (Int, XMLElement) { try await caller.call(body, user: user) }

    @Test func profilesCarryTheirConfigurationsWhenAsked() async throws {
        let (_, bare) = try await call("<m:GetProfiles/>")
        #expect(bare.children("Profiles").compactMap { $0.attribute("token") } == ["rear_main", "rear_sub", "rear_jpeg", "front_main", "front_sub", "front_jpeg"])
        #expect(bare.children("Profiles").allSatisfy { $0.child("Configurations") == nil }, "no Type: no configurations")
        let (_, all) = try await call("<m:GetProfiles><m:Token>front_sub</m:Token><m:Type>All</m:Type></m:GetProfiles>")
        let p = try #require(all.children("Profiles").first)
        #expect(all.children("Profiles").count == 1 && p.child("Name")?.text == "front sub")
        let encoder = try #require(p["Configurations", "VideoEncoder"])
        #expect(encoder.attribute("GovLength") == "30" && encoder.attribute("Profile") == "Main")
        #expect(encoder["RateControl", "FrameRateLimit"]?.text == "15.0" && encoder["RateControl", "BitrateLimit"]?.text == "500")
        #expect(p["Configurations", "VideoSource", "SourceToken"]?.text == "front" && p["Configurations", "PTZ", "NodeToken"]?.text == "front")
        let (_, one) = try await call("<m:GetProfiles><m:Type>VideoEncoder</m:Type></m:GetProfiles>")
        #expect(one.children("Profiles").allSatisfy { $0["Configurations", "VideoEncoder"] != nil && $0["Configurations", "VideoSource"] == nil })
        #expect(try await call("<m:GetProfiles><m:Token>side</m:Token></m:GetProfiles>").0 == 400)
    }

    @Test func streamAndSnapshotURIsByProtocol() async throws {
        let (_, uri) = try await call("<m:GetStreamUri><m:Protocol>RtspUnicast</m:Protocol><m:ProfileToken>rear_sub</m:ProfileToken></m:GetStreamUri>")
        #expect(uri.child("Uri")?.text == "rtsp://h:8554/rear/sub")
        let (status, fault) = try await call("<m:GetStreamUri><m:Protocol>RtspMulticast</m:Protocol><m:ProfileToken>rear_sub</m:ProfileToken></m:GetStreamUri>")
        #expect(status == 400 && fault["Reason", "Text"]?.text.contains("RtspMulticast") == true)
        let (_, snap) = try await call("<m:GetSnapshotUri><m:ProfileToken>front_main</m:ProfileToken></m:GetSnapshotUri>")
        #expect(snap.child("Uri")?.text == "http://h:80/cameras/front/snapshot")
    }

    @Test func encodersTheirOptionsAndASetThatReachesTheStream() async throws {
        let (_, byProfile) = try await call("<m:GetVideoEncoderConfigurations><m:ProfileToken>rear_main</m:ProfileToken></m:GetVideoEncoderConfigurations>")
        #expect(byProfile.children("Configurations").compactMap { $0.attribute("token") } == ["rear_main"])
        let (_, sources) = try await call("<m:GetVideoSourceConfigurations/>")
        #expect(sources.children("Configurations").compactMap { $0.attribute("token") } == ["rear", "front"])
        let (_, options) = try await call("<m:GetVideoEncoderConfigurationOptions><m:ConfigurationToken>rear_main</m:ConfigurationToken></m:GetVideoEncoderConfigurationOptions>")
        let o = try #require(options.child("Options"))
        #expect(o.child("Encoding")?.text == "H264" && o.children("ResolutionsAvailable").count == 3)
        #expect(o.attribute("GovLengthRange") == "60 60" && o.attribute("FrameRatesSupported") == "15.0 20.0 25.0 30.0 50.0 60.0")
        #expect(o["BitrateRange", "Max"]?.text == "100000")

        let set = { (res: String, gov: Int) in """
            <m:SetVideoEncoderConfiguration><m:Configuration token="rear_main" GovLength="\(gov)" Profile="Main"><t:Name>rear_main</t:Name>\
            <t:UseCount>1</t:UseCount><t:Encoding>H264</t:Encoding><t:Resolution>\(res)</t:Resolution>\
            <t:RateControl ConstantBitRate="false"><t:FrameRateLimit>15.0</t:FrameRateLimit><t:BitrateLimit>800</t:BitrateLimit></t:RateControl>\
            <t:Quality>5.0</t:Quality></m:Configuration></m:SetVideoEncoderConfiguration>
            """ }
        let (refused, fault) = try await call(set("<t:Width>640</t:Width><t:Height>480</t:Height>", 10))
        #expect(refused == 400 && SignedCaller.subcode(fault) == "ConfigModify" && fault["Reason", "Text"]?.text.contains("GovLength 10") == true)
        #expect(device.streams.cameras.withLock { $0["rear"] } == StreamModel.Streams(), "refused: nothing changed")
        #expect(try await call(set("<t:Width>640</t:Width><t:Height>480</t:Height>", 60)).0 == 200)
        #expect(device.streams.cameras.withLock { $0["rear"] } == StreamModel.Streams(width: 640, height: 480, fps: 30, main: 800, sub: 500),
                "640x480 has only 30 fps: the camera took that")
        #expect(try await call(set("<t:Width>640</t:Width><t:Height>480</t:Height>", 60), user: "viewer").0 == 400)
    }
}
