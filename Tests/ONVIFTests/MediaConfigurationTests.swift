// Media ver10's configurations as an NVR sees them, over the two-camera device whose streams
// behave as the session's do (StreamModel): every configuration by token, the options an
// encoder has, a SetVideoEncoderConfiguration that reaches the stream and reads back as what
// the camera took, and every refusal a fault naming what was refused, with nothing changed.

import ONVIF
import SOAP
import Testing

@Suite struct MediaConfigurationTests {
    let device = TwoCameras()
    let caller: SignedCaller

    init() { caller = SignedCaller(device, ["m": ONVIFNamespace.media, "t": ONVIFNamespace.schema]) }

    func call(_ body: String, user: String = "operator") async throws -> (Int, XMLElement) { try await caller.call(body, user: user) }

    func encoder(_ token: String) async throws -> XMLElement {
        try #require(try await call("<m:GetVideoEncoderConfiguration><m:ConfigurationToken>\(token)</m:ConfigurationToken></m:GetVideoEncoderConfiguration>").1.child("Configuration"))
    }

    /// A SetVideoEncoderConfiguration of `token` with the given parts (the rest as a client
    /// that read the configuration first would send them).
    func set(_ token: String, width: Int = 1280, height: Int = 720, fps: Int = 30, bitrate: Int = 2200, quality: String = "5",
             gov: Int = 60, encoding: String = "H264", user: String = "operator") async throws -> (Int, XMLElement) {
        try await call("""
            <m:SetVideoEncoderConfiguration><m:Configuration token="\(token)"><t:Name>\(token)</t:Name><t:UseCount>1</t:UseCount>\
            <t:Encoding>\(encoding)</t:Encoding><t:Resolution><t:Width>\(width)</t:Width><t:Height>\(height)</t:Height></t:Resolution>\
            <t:Quality>\(quality)</t:Quality><t:RateControl><t:FrameRateLimit>\(fps)</t:FrameRateLimit><t:EncodingInterval>1</t:EncodingInterval>\
            <t:BitrateLimit>\(bitrate)</t:BitrateLimit></t:RateControl><t:H264><t:GovLength>\(gov)</t:GovLength><t:H264Profile>Main</t:H264Profile></t:H264>\
            <t:SessionTimeout>PT60S</t:SessionTimeout></m:Configuration><m:ForcePersistence>true</m:ForcePersistence></m:SetVideoEncoderConfiguration>
            """, user: user)
    }

    @Test func everyConfigurationByToken() async throws {
        let (_, encoders) = try await call("<m:GetVideoEncoderConfigurations/>")
        let list = encoders.children("Configurations")
        #expect(list.compactMap { $0.attribute("token") } == ["rear_main", "rear_sub", "rear_jpeg", "front_main", "front_sub", "front_jpeg"])
        #expect(list[1]["Resolution", "Width"]?.trimmedText == "640" && list[1]["RateControl", "FrameRateLimit"]?.trimmedText == "15")
        #expect(list.allSatisfy { $0["RateControl", "BitrateLimit"] != nil })
        #expect(list.map { $0.child("Encoding")?.trimmedText } == ["H264", "H264", "JPEG", "H264", "H264", "JPEG"])

        let (_, sources) = try await call("<m:GetVideoSourceConfigurations/>")
        let cams = sources.children("Configurations")
        #expect(cams.compactMap { $0.attribute("token") } == ["rear", "front"])
        #expect(cams.allSatisfy { $0.child("UseCount")?.trimmedText == "3" && $0["Bounds"]?.attribute("width") == "1280" })
        let (_, one) = try await call("<m:GetVideoSourceConfiguration><m:ConfigurationToken>front</m:ConfigurationToken></m:GetVideoSourceConfiguration>")
        #expect(one["Configuration", "SourceToken"]?.trimmedText == "front")
        let (_, compatible) = try await call("<m:GetCompatibleVideoEncoderConfigurations><m:ProfileToken>front_sub</m:ProfileToken></m:GetCompatibleVideoEncoderConfigurations>")
        #expect(compatible.children("Configurations").compactMap { $0.attribute("token") } == ["front_sub"])
        let (_, instances) = try await call("<m:GetGuaranteedNumberOfVideoEncoderInstances><m:ConfigurationToken>rear</m:ConfigurationToken></m:GetGuaranteedNumberOfVideoEncoderInstances>")
        #expect(instances.child("TotalNumber")?.trimmedText == "3" && instances.child("H264")?.trimmedText == "2"
                && instances.child("JPEG")?.trimmedText == "1")

        let (status, none) = try await call("<m:GetVideoEncoderConfiguration><m:ConfigurationToken>side_main</m:ConfigurationToken></m:GetVideoEncoderConfiguration>")
        #expect(status == 400 && SignedCaller.subcode(none) == "NoConfig")
    }

    @Test func optionsListWhatEachStreamCanBe() async throws {
        let (_, main) = try await call("<m:GetVideoEncoderConfigurationOptions><m:ConfigurationToken>rear_main</m:ConfigurationToken></m:GetVideoEncoderConfigurationOptions>")
        let h264 = try #require(main["Options", "H264"])
        #expect(h264.children("ResolutionsAvailable").map { "\($0.child("Width")!.trimmedText)x\($0.child("Height")!.trimmedText)" } == ["1920x1080", "1280x720", "640x480"])
        #expect(h264["FrameRateRange", "Min"]?.trimmedText == "15" && h264["FrameRateRange", "Max"]?.trimmedText == "60")
        #expect(main["Options", "Extension", "H264", "BitrateRange", "Max"]?.trimmedText == "100000")
        #expect(main["Options", "QualityRange", "Min"]?.trimmedText == "5" && main["Options", "QualityRange", "Max"]?.trimmedText == "5")
        // By profile: the sub stream offers the one size and rate it has.
        let (_, sub) = try await call("<m:GetVideoEncoderConfigurationOptions><m:ProfileToken>front_sub</m:ProfileToken></m:GetVideoEncoderConfigurationOptions>")
        #expect(sub["Options", "H264"]?.children("ResolutionsAvailable").count == 1)
        #expect(sub["Options", "H264", "FrameRateRange", "Max"]?.trimmedText == "15")
    }

    @Test func aSetReachesTheStreamAndReadsBackAsTaken() async throws {
        // 25 fps at 1080p: the camera has 30 and 15 there, and takes 30.
        let (status, _) = try await set("rear_main", width: 1920, height: 1080, fps: 25, bitrate: 4000)
        #expect(status == 200)
        let main = try await encoder("rear_main")
        #expect(main["Resolution", "Width"]?.trimmedText == "1920" && main["Resolution", "Height"]?.trimmedText == "1080")
        #expect(main["RateControl", "FrameRateLimit"]?.trimmedText == "30" && main["RateControl", "BitrateLimit"]?.trimmedText == "4000")
        // The sub stream follows the picture's aspect; its cap is its own.
        #expect(try await encoder("rear_sub")["Resolution", "Height"]?.trimmedText == "360")
        #expect(try await set("rear_sub", width: 640, height: 360, fps: 15, bitrate: 300, gov: 30).0 == 200)
        #expect(try await encoder("rear_sub")["RateControl", "BitrateLimit"]?.trimmedText == "300")
        #expect(device.streams.cameras.withLock { $0["front"] } == StreamModel.Streams(), "the other camera untouched")
    }

    @Test func theJPEGProfileIsOfferedAsItIs() async throws {
        let jpeg = try await encoder("rear_jpeg")
        #expect(jpeg.child("Encoding")?.trimmedText == "JPEG" && jpeg.child("Quality")?.trimmedText == "8" && jpeg.child("H264") == nil)
        let (_, options) = try await call("<m:GetVideoEncoderConfigurationOptions><m:ConfigurationToken>rear_jpeg</m:ConfigurationToken></m:GetVideoEncoderConfigurationOptions>")
        #expect(options["Options", "JPEG", "ResolutionsAvailable", "Width"]?.trimmedText == "1280" && options["Options", "H264"] == nil)
        #expect(options["Options", "QualityRange", "Min"]?.trimmedText == "8" && options["Options", "Extension", "JPEG", "BitrateRange"] != nil)
        let before = device.streams.cameras.withLock { $0 }
        let (status, fault) = try await set("rear_jpeg", width: 640, height: 480, fps: 30, bitrate: 9000, quality: "8", encoding: "JPEG")
        #expect(status == 400 && fault["Reason", "Text"]?.text.contains("640x480") == true)
        let (q, qualityFault) = try await set("rear_jpeg", fps: 30, bitrate: 9000, quality: "3", encoding: "JPEG")
        #expect(q == 400 && qualityFault["Reason", "Text"]?.text.contains("Quality 3 is outside 8…8") == true)
        let (h, h264) = try await set("rear_jpeg", fps: 30, bitrate: 9000, quality: "8")
        #expect(h == 400 && h264["Reason", "Text"]?.text.contains("this profile's stream is JPEG") == true)
        #expect(try await set("rear_jpeg", fps: 30, bitrate: 9000, quality: "8", encoding: "JPEG").0 == 200, "as it is: taken")
        #expect(device.streams.cameras.withLock { $0 } == before)
    }

    @Test func eachRefusalNamesWhatAndChangesNothing() async throws {
        let before = device.streams.cameras.withLock { $0 }
        let refusals: [(String, (Int, XMLElement))] = [
            ("800x600", try await set("rear_main", width: 800, height: 600)),
            ("1280x720", try await set("rear_sub", width: 1280, height: 720, fps: 15, bitrate: 500, gov: 30)),
            ("FrameRateLimit 90", try await set("rear_main", fps: 90)),
            ("BitrateLimit 0", try await set("rear_main", bitrate: 0)),
            ("Quality 7", try await set("rear_main", quality: "7")),
            ("GovLength 10", try await set("rear_main", gov: 10)),
            ("Encoding JPEG", try await set("rear_main", encoding: "JPEG")),
            ("'x'", try await set("rear_main", quality: "x")),
        ]
        for (named, (status, fault)) in refusals {
            #expect(status == 400 && SignedCaller.subcode(fault) == "ConfigModify", "\(named)")
            #expect(fault["Reason", "Text"]?.text.contains(named) == true, "\(named): \(fault["Reason", "Text"]?.text ?? "")")
        }
        // A float Quality equal to the reported one is the same value.
        #expect(try await set("front_main", quality: "5.000000").0 == 200)
        let (viewer, denied) = try await set("rear_main", bitrate: 3000, user: "viewer")
        #expect(viewer == 400 && SignedCaller.subcode(denied) == "NotAuthorized")
        #expect(try await set("side_main").0 == 400)
        #expect(device.streams.cameras.withLock { $0 } == before)
    }
}
