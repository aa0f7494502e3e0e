// The PTZ service as a client sees it, through envelope bytes, over a device that behaves
// like a crop: a node and a configuration per camera with the spaces Home Assistant looks
// for, absolute, relative (generic and field of view) and continuous moves, Stop, status,
// presets, and each refusal a fault that moves nothing.

import ONVIF
import SOAP
import Testing

@Suite struct PTZServiceTests {
    let device = TwoCameras()
    let caller: SignedCaller

    init() { caller = SignedCaller(device, ["p": ONVIFNamespace.ptz, "t": ONVIFNamespace.schema]) }

    func call(_ body: String, user: String = "operator") async throws -> (Int, XMLElement) { try await caller.call(body, user: user) }

    func status(_ profile: String = "rear_main") async throws -> (pan: Double, tilt: Double, zoom: Double, zoomMoving: String) {
        let (_, r) = try await call("<p:GetStatus><p:ProfileToken>\(profile)</p:ProfileToken></p:GetStatus>")
        let pt = r["PTZStatus", "Position", "PanTilt"], z = r["PTZStatus", "Position", "Zoom"]
        return (Double(pt?.attribute("x") ?? "") ?? .nan, Double(pt?.attribute("y") ?? "") ?? .nan, Double(z?.attribute("x") ?? "") ?? .nan,
                r["PTZStatus", "MoveStatus", "Zoom"]?.trimmedText ?? "")
    }

    static func subcode(_ fault: XMLElement) -> String { SignedCaller.subcode(fault) }

    @Test func aNodeAndAConfigurationPerCameraWithTheSpacesClientsLookFor() async throws {
        let (_, nodes) = try await call("<p:GetNodes/>")
        #expect(nodes.children("PTZNode").compactMap { $0.attribute("token") } == ["rear", "front"])
        let spaces = try #require(nodes.child("PTZNode")?.child("SupportedPTZSpaces"))
        let relative: [String] = spaces.children("RelativePanTiltTranslationSpace").compactMap { $0.child("URI")?.trimmedText }
        #expect(relative.contains("http://www.onvif.org/ver10/tptz/PanTiltSpaces/TranslationSpaceFov"), "Frigate's autotracking space")
        let (_, configs) = try await call("<p:GetConfigurations/>")
        let rear = try #require(configs.children("PTZConfiguration").first)
        #expect(rear.attribute("token") == "rear_ptz" && rear.child("NodeToken")?.trimmedText == "rear")
        for name in ["DefaultContinuousPanTiltVelocitySpace", "DefaultRelativePanTiltTranslationSpace", "DefaultAbsolutePantTiltPositionSpace"] {
            #expect(rear.child(name) != nil, "Home Assistant offers moves only with \(name)")
        }
        let (_, profiles) = try await SignedCaller(device, ["m": ONVIFNamespace.media]).call("<m:GetProfiles/>")
        #expect(profiles.children("Profiles").allSatisfy { $0["PTZConfiguration", "NodeToken"] != nil }, "every profile names its camera's PTZ")
        #expect(try await call("<p:GetNode><p:NodeToken>side</p:NodeToken></p:GetNode>").0 == 400)
    }

    @Test func absoluteAndRelativeMovesAndTheFieldOfView() async throws {
        // 2× (zoom 1/7 of 1×…8×): the crop reaches ±0.5 of the generic space.
        #expect(try await call("""
            <p:AbsoluteMove><p:ProfileToken>rear_main</p:ProfileToken><p:Position><t:PanTilt x="0.9" y="-0.2"/><t:Zoom x="\(1.0 / 7)"/></p:Position></p:AbsoluteMove>
            """).0 == 200)
        var s = try await status()
        #expect(abs(s.zoom - 1.0 / 7) < 1e-3 && s.pan == 0.5 && s.tilt == -0.2, "pan stopped where the crop ends: \(s)")
        #expect(try await status("rear_sub").pan == 0.5, "the sub profile is the same camera")
        #expect(try await status("front_main").pan == 0, "the other camera did not move")
        // A field-of-view step of -1: half the picture left, which at 2× is 0.5 of the space.
        _ = try await call("""
            <p:RelativeMove><p:ProfileToken>rear_main</p:ProfileToken><p:Translation><t:PanTilt x="-1" y="0" space="http://www.onvif.org/ver10/tptz/PanTiltSpaces/TranslationSpaceFov"/></p:Translation></p:RelativeMove>
            """)
        s = try await status()
        #expect(s.pan == 0 && s.tilt == -0.2, "\(s)")
        // Generic: plain units; the zoom steps too.
        _ = try await call("""
            <p:RelativeMove><p:ProfileToken>rear_main</p:ProfileToken><p:Translation><t:PanTilt x="0.25" y="0.1"/><t:Zoom x="0.5"/></p:Translation></p:RelativeMove>
            """)
        s = try await status()
        #expect(s.pan == 0.25 && abs(s.tilt - -0.1) < 1e-9 && abs(s.zoom - (1.0 / 7 + 0.5)) < 1e-3, "\(s)")
    }

    /// The move and its timeout are the device's: the service passes the timeout (a second
    /// when none is given, at most 60) and the parts a Stop names.
    @Test func aContinuousZoomEndsAtItsTimeoutAndStopHoldsIt() async throws {
        let clock = device.lens.clock
        _ = try await call("<p:ContinuousMove><p:ProfileToken>rear_main</p:ProfileToken><p:Velocity><t:Zoom x=\"0.5\"/></p:Velocity></p:ContinuousMove>")
        #expect(try await status().zoomMoving == "MOVING")
        // Home Assistant's Stop leaves the zoom (Zoom=false): it keeps moving…
        _ = try await call("<p:Stop><p:ProfileToken>rear_main</p:ProfileToken><p:PanTilt>true</p:PanTilt><p:Zoom>false</p:Zoom></p:Stop>")
        clock.advance(by: 0.9)
        #expect(try await status().zoomMoving == "MOVING")
        // …until the default timeout (a second) ends what it started.
        clock.advance(by: 0.1)
        let ended = try await status()
        #expect(ended.zoomMoving == "IDLE" && abs(ended.zoom - 0.5) < 1e-9, "ended by its default timeout: \(ended)")
        _ = try await call("<p:ContinuousMove><p:ProfileToken>rear_main</p:ProfileToken><p:Velocity><t:Zoom x=\"-1\"/></p:Velocity><p:Timeout>PT60S</p:Timeout></p:ContinuousMove>")
        _ = try await call("<p:ContinuousMove><p:ProfileToken>rear_main</p:ProfileToken><p:Velocity><t:Zoom x=\"-1\"/></p:Velocity><p:Timeout>PT5M</p:Timeout></p:ContinuousMove>")
        #expect(device.lens.timeouts.withLock { $0 } == [1, 60, 60], "the default, as asked, and at most a minute")
        #expect(try await status().zoomMoving == "MOVING")
        _ = try await call("<p:Stop><p:ProfileToken>rear_main</p:ProfileToken></p:Stop>")
        #expect(try await status().zoomMoving == "IDLE", "a Stop with no parts named stops both")
    }

    @Test func aContinuousPanMovesTheCropUntilStopped() async throws {
        let clock = device.lens.clock
        _ = try await call("<p:AbsoluteMove><p:ProfileToken>front_main</p:ProfileToken><p:Position><t:Zoom x=\"1\"/></p:Position></p:AbsoluteMove>")
        _ = try await call("<p:ContinuousMove><p:ProfileToken>front_main</p:ProfileToken><p:Velocity><t:PanTilt x=\"1\" y=\"0\"/></p:Velocity><p:Timeout>PT10S</p:Timeout></p:ContinuousMove>")
        clock.advance(by: 0.25)
        let (_, moving) = try await call("<p:GetStatus><p:ProfileToken>front_main</p:ProfileToken></p:GetStatus>")
        #expect(moving["PTZStatus", "MoveStatus", "PanTilt"]?.trimmedText == "MOVING")
        #expect(try await status("front_main").pan == 0.25, "the centre moved right")
        _ = try await call("<p:Stop><p:ProfileToken>front_main</p:ProfileToken></p:Stop>")
        clock.advance(by: 1)
        #expect(try await status("front_main").pan == 0.25, "stopped means stopped")
        let (_, idle) = try await call("<p:GetStatus><p:ProfileToken>front_main</p:ProfileToken></p:GetStatus>")
        #expect(idle["PTZStatus", "MoveStatus", "PanTilt"]?.trimmedText == "IDLE")
    }

    @Test func presetsAreKeptAndGoneBackTo() async throws {
        _ = try await call("<p:AbsoluteMove><p:ProfileToken>rear_main</p:ProfileToken><p:Position><t:PanTilt x=\"0.5\" y=\"0.5\"/><t:Zoom x=\"1\"/></p:Position></p:AbsoluteMove>")
        let (status, set) = try await call("<p:SetPreset><p:ProfileToken>rear_main</p:ProfileToken><p:PresetName>door</p:PresetName></p:SetPreset>")
        let token = try #require(set.child("PresetToken")?.trimmedText)
        #expect(status == 200)
        _ = try await call("<p:AbsoluteMove><p:ProfileToken>rear_main</p:ProfileToken><p:Position><t:PanTilt x=\"0\" y=\"0\"/><t:Zoom x=\"0\"/></p:Position></p:AbsoluteMove>")
        let (_, presets) = try await call("<p:GetPresets><p:ProfileToken>rear_main</p:ProfileToken></p:GetPresets>")
        #expect(presets.children("Preset").map { $0.child("Name")?.trimmedText } == ["door"])
        _ = try await call("<p:GotoPreset><p:ProfileToken>rear_main</p:ProfileToken><p:PresetToken>\(token)</p:PresetToken></p:GotoPreset>")
        let back = try await self.status()
        #expect(back.pan == 0.5 && back.tilt == 0.5 && back.zoom == 1)
        #expect(try await call("<p:RemovePreset><p:ProfileToken>rear_main</p:ProfileToken><p:PresetToken>\(token)</p:PresetToken></p:RemovePreset>").0 == 200)
        let (gone, fault) = try await call("<p:GotoPreset><p:ProfileToken>rear_main</p:ProfileToken><p:PresetToken>\(token)</p:PresetToken></p:GotoPreset>")
        #expect(gone == 400 && Self.subcode(fault) == "NoToken")
        for _ in 0..<16 { _ = try await call("<p:SetPreset><p:ProfileToken>front_main</p:ProfileToken></p:SetPreset>") }
        let (full, refusal) = try await call("<p:SetPreset><p:ProfileToken>front_main</p:ProfileToken></p:SetPreset>")
        #expect(full == 500 && Self.subcode(refusal) == "TooManyPresets")
    }

    @Test func refusalsAreFaultsAndMoveNothing() async throws {
        for (body, code) in [
            ("<p:AbsoluteMove><p:ProfileToken>rear_main</p:ProfileToken><p:Position><t:PanTilt x=\"2\" y=\"0\"/></p:Position></p:AbsoluteMove>", "InvalidPosition"),
            ("<p:AbsoluteMove><p:ProfileToken>rear_main</p:ProfileToken><p:Position><t:Zoom x=\"-0.5\"/></p:Position></p:AbsoluteMove>", "InvalidPosition"),
            ("<p:AbsoluteMove><p:ProfileToken>rear_main</p:ProfileToken><p:Position><t:PanTilt x=\"NaN\" y=\"0\"/></p:Position></p:AbsoluteMove>", "InvalidPosition"),
            ("<p:AbsoluteMove><p:ProfileToken>rear_main</p:ProfileToken><p:Position/></p:AbsoluteMove>", "InvalidPosition"),
            ("<p:AbsoluteMove><p:ProfileToken>rear_main</p:ProfileToken><p:Position><t:PanTilt x=\"0.1\" y=\"0\" space=\"urn:degrees\"/></p:Position></p:AbsoluteMove>", "SpaceNotSupported"),
            ("<p:AbsoluteMove><p:ProfileToken>side_main</p:ProfileToken><p:Position><t:Zoom x=\"0.5\"/></p:Position></p:AbsoluteMove>", "NoProfile"),
            ("<p:ContinuousMove><p:ProfileToken>rear_main</p:ProfileToken><p:Velocity><t:Zoom x=\"1\"/></p:Velocity><p:Timeout>soon</p:Timeout></p:ContinuousMove>", "InvalidTimeout"),
        ] {
            let (status, fault) = try await call(body)
            #expect(status == 400 && Self.subcode(fault) == code, "\(body): \(Self.subcode(fault))")
        }
        let (refused, fault) = try await call("<p:AbsoluteMove><p:ProfileToken>rear_main</p:ProfileToken><p:Position><t:Zoom x=\"1\"/></p:Position></p:AbsoluteMove>", user: "viewer")
        #expect(refused == 400 && Self.subcode(fault) == "NotAuthorized", "a viewer does not move the camera")
        let s = try await status()
        #expect(s.pan == 0 && s.tilt == 0 && s.zoom == 0 && s.zoomMoving == "IDLE")
        #expect(try await call("<p:GetStatus><p:ProfileToken>rear_main</p:ProfileToken></p:GetStatus>", user: "viewer").0 == 200, "but reads where it is")
    }
}
