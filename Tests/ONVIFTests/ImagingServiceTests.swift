// The imaging service as a client sees it, over a C920-like rear camera and a fixed front
// one: settings and options that list only what each camera has, changes that reach the
// device, and every refusal a fault that changes nothing.

import ONVIF
import SOAP
import Testing

@Suite struct ImagingServiceTests {
    let device = TwoCameras()
    let caller: SignedCaller

    init() { caller = SignedCaller(device, ["i": ONVIFNamespace.imaging, "t": ONVIFNamespace.schema]) }

    func call(_ body: String, user: String = "operator") async throws -> (Int, XMLElement) { try await caller.call(body, user: user) }

    func settings(_ source: String = "rear") async throws -> XMLElement {
        try #require(try await call("<i:GetImagingSettings><i:VideoSourceToken>\(source)</i:VideoSourceToken></i:GetImagingSettings>").1.child("ImagingSettings"))
    }

    func set(_ inner: String, source: String = "rear", user: String = "operator") async throws -> (Int, XMLElement) {
        try await call("<i:SetImagingSettings><i:VideoSourceToken>\(source)</i:VideoSourceToken><i:ImagingSettings>\(inner)</i:ImagingSettings></i:SetImagingSettings>", user: user)
    }

    static func subcode(_ fault: XMLElement) -> String { SignedCaller.subcode(fault) }

    @Test func settingsAndOptionsListWhatEachCameraHas() async throws {
        let rear = try await settings()
        #expect(rear["Focus", "AutoFocusMode"]?.trimmedText == "AUTO" && rear["Exposure", "Mode"]?.trimmedText == "AUTO")
        #expect(rear["Exposure", "ExposureTime"]?.trimmedText == "16667.0" && rear["Exposure", "MaxGain"]?.trimmedText == "3200.0")
        let (_, options) = try await call("<i:GetOptions><i:VideoSourceToken>rear</i:VideoSourceToken></i:GetOptions>")
        #expect(options["ImagingOptions", "Exposure"]?.children("Mode").map(\.trimmedText) == ["AUTO", "MANUAL"])
        #expect(options["ImagingOptions", "Exposure", "ExposureTime", "Max"]?.trimmedText == "200000.0")
        let (_, fixed) = try await call("<i:GetOptions><i:VideoSourceToken>front</i:VideoSourceToken></i:GetOptions>")
        #expect(fixed["ImagingOptions", "Exposure"]?.children("Mode").map(\.trimmedText) == ["AUTO"])
        #expect(fixed["ImagingOptions", "Exposure", "ExposureTime"] == nil, "no range the camera lacks")
        #expect(try await call("<i:GetMoveOptions><i:VideoSourceToken>front</i:VideoSourceToken></i:GetMoveOptions>").1["MoveOptions", "Absolute"] == nil)
        #expect(try await call("<i:GetOptions><i:VideoSourceToken>side</i:VideoSourceToken></i:GetOptions>").0 == 400)
    }

    @Test func manualExposureFocusAndWhiteBalanceReachTheCamera() async throws {
        let (status, _) = try await set("""
            <t:Exposure><t:Mode>MANUAL</t:Mode><t:ExposureTime>10000</t:ExposureTime><t:Gain>400</t:Gain></t:Exposure>\
            <t:WhiteBalance><t:Mode>MANUAL</t:Mode></t:WhiteBalance>
            """)
        #expect(status == 200)
        let s = try await settings()
        #expect(s["Exposure", "Mode"]?.trimmedText == "MANUAL" && s["Exposure", "ExposureTime"]?.trimmedText == "10000.0"
                && s["Exposure", "Gain"]?.trimmedText == "400.0" && s["WhiteBalance", "Mode"]?.trimmedText == "MANUAL")
        #expect(try await call("<i:Move><i:VideoSourceToken>rear</i:VideoSourceToken><i:Focus><t:Absolute><t:Position>0.3</t:Position></t:Absolute></i:Focus></i:Move>").0 == 200)
        let (_, st) = try await call("<i:GetStatus><i:VideoSourceToken>rear</i:VideoSourceToken></i:GetStatus>")
        #expect(st["Status", "FocusStatus20", "Position"]?.trimmedText == "0.3")
        #expect(try await settings()["Focus", "AutoFocusMode"]?.trimmedText == "MANUAL", "a lens position locks the focus")
        #expect(try await set("<t:Focus><t:AutoFocusMode>AUTO</t:AutoFocusMode></t:Focus>").0 == 200)
        #expect(try await settings()["Focus", "AutoFocusMode"]?.trimmedText == "AUTO")
    }

    @Test func theCamerasOwnAdjustmentsInTheirOwnRanges() async throws {
        let s = try await settings()
        #expect(s.children.map(\.name.local) == ["BacklightCompensation", "Brightness", "Contrast", "Exposure", "Focus", "WhiteBalance"],
                "ImagingSettings20's order")
        #expect(s["Brightness"]?.trimmedText == "128.0" && s["BacklightCompensation", "Mode"]?.trimmedText == "OFF")
        let (_, options) = try await call("<i:GetOptions><i:VideoSourceToken>rear</i:VideoSourceToken></i:GetOptions>")
        #expect(options["ImagingOptions", "Brightness", "Max"]?.trimmedText == "255.0")
        #expect(options["ImagingOptions", "BacklightCompensation"]?.children("Mode").map(\.trimmedText) == ["OFF", "ON"])
        let (_, fixed) = try await call("<i:GetOptions><i:VideoSourceToken>front</i:VideoSourceToken></i:GetOptions>")
        #expect(fixed["ImagingOptions", "Brightness"] == nil, "a camera without the control has none")

        #expect(try await set("<t:BacklightCompensation><t:Mode>ON</t:Mode></t:BacklightCompensation><t:Brightness>200.4</t:Brightness>").0 == 200)
        let after = try await settings()
        #expect(after["Brightness"]?.trimmedText == "200.0" && after["BacklightCompensation", "Mode"]?.trimmedText == "ON"
                && after["BacklightCompensation", "Level"]?.trimmedText == "1.0", "the device's integer steps, read back")
        #expect(after["Contrast"]?.trimmedText == "32.0", "what was not named stays")
    }

    @Test func refusalsChangeNothing() async throws {
        let before = try await settings()
        for (inner, source) in [
            ("<t:Exposure><t:Mode>MANUAL</t:Mode><t:ExposureTime>900000</t:ExposureTime></t:Exposure>", "rear"),
            ("<t:Exposure><t:Mode>MANUAL</t:Mode><t:Gain>a lot</t:Gain></t:Exposure>", "rear"),
            ("<t:Exposure><t:Mode>AUTO</t:Mode><t:Gain>200</t:Gain></t:Exposure>", "rear"),
            ("<t:Exposure><t:Mode>SHUTTER</t:Mode></t:Exposure>", "rear"),
            ("<t:Exposure><t:Mode>MANUAL</t:Mode></t:Exposure>", "front"),
            ("<t:WhiteBalance><t:Mode>MANUAL</t:Mode><t:CrGain>10</t:CrGain></t:WhiteBalance>", "rear"),
            ("<t:Brightness>60</t:Brightness>", "front"),
            ("<t:Brightness>300</t:Brightness>", "rear"),
            ("<t:BacklightCompensation><t:Mode>HALF</t:Mode></t:BacklightCompensation>", "rear"),
            ("<t:IrCutFilter>ON</t:IrCutFilter>", "rear"),
        ] {
            let (status, fault) = try await set(inner, source: source)
            #expect(status == 400 && Self.subcode(fault) == "SettingsInvalid", "\(inner): \(status) \(Self.subcode(fault))")
        }
        #expect(try await call("<i:Move><i:VideoSourceToken>rear</i:VideoSourceToken><i:Focus><t:Absolute><t:Position>1.5</t:Position></t:Absolute></i:Focus></i:Move>").0 == 400)
        #expect(try await call("<i:Move><i:VideoSourceToken>front</i:VideoSourceToken><i:Focus><t:Absolute><t:Position>0.5</t:Position></t:Absolute></i:Focus></i:Move>").0 == 500,
                "a fixed-focus camera has no lens to move")
        let (refused, fault) = try await set("<t:Exposure><t:Mode>MANUAL</t:Mode></t:Exposure>", user: "viewer")
        #expect(refused == 400 && Self.subcode(fault) == "NotAuthorized")
        #expect(try await settings() == before, "nothing changed")
    }
}
