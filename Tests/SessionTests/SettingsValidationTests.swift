// The pure parts of the session: each request against capabilities, and preset matching.

import CameraCore
import Testing
@testable import Session

@Suite struct SettingsValidationTests {
    let sim = Capabilities.simulated, fixed = Capabilities.fixed
    var defaults: DeviceSettings { DeviceSettings(for: sim) }

    @Test(arguments: [
        (1.0, 5.0, 1.0, 1.0), (2.0, 5.0, 2.0, 1.0), (5.0, 5.0, 5.0, 1.0), (10.0, 5.0, 5.0, 2.0), (3.0, 1.0, 1.0, 3.0),
    ])
    func zoomIsRoutedOnce(factor: Double, opticalMax: Double, optical: Double, digital: Double) {
        let caps = ZoomCapability(min: 1, max: 20, optical: opticalMax > 1, opticalMax: opticalMax)
        let parts = SettingsValidation.zoomParts(factor, caps)
        #expect(parts.optical == optical && parts.digital == digital)
        #expect(abs(parts.optical * parts.digital - factor) < 1e-9, "never both for the same part of the factor")
    }

    @Test func zoomClampsAndRefusesNonsense() throws {
        #expect(try SettingsValidation.zoom(ZoomRequest(factor: 50), sim.zoom).factor == 8)
        #expect(throws: SessionError.invalidValue("factor must be positive")) { try SettingsValidation.zoom(ZoomRequest(factor: 0), sim.zoom) }
        #expect(throws: SessionError.self) { try SettingsValidation.zoom(ZoomRequest(factor: 2, rate: -1), sim.zoom) }
    }

    /// (request, expected mode or error code)
    @Test(arguments: [
        (FocusRequest(mode: "locked", lensPosition: 2), "locked"),
        (FocusRequest(mode: nil, lensPosition: 0.2), "locked"),
        (FocusRequest(mode: "auto"), "auto"),
        (FocusRequest(mode: "macro"), "unsupported"),
        (FocusRequest(mode: nil), "invalid"),
        (FocusRequest(mode: "auto", lensPosition: 0.5), "invalid"),
    ])
    func focusRequests(_ r: FocusRequest, _ expected: String) {
        do {
            let (s, runAF) = try SettingsValidation.focus(r, sim, defaults)
            #expect(s.focus.mode.rawValue == expected)
            #expect(runAF == (s.focus.mode == .auto))
            #expect((0...1).contains(s.focus.lensPosition))
        } catch {
            switch error {
            case .unsupported(_, let supported): #expect(expected == "unsupported" && supported == ["locked", "auto", "continuous"])
            case .invalidValue: #expect(expected == "invalid")
            default: Issue.record("unexpected \(error)")
            }
        }
    }

    @Test func exposureRequests() throws {
        let custom = try SettingsValidation.exposure(ExposureRequest(mode: nil, duration: 9, iso: 10), sim, defaults)
        #expect(custom.exposure.mode == .custom && custom.exposure.duration == 0.5 && custom.exposure.iso == 50, "clamped")
        let bias = try SettingsValidation.exposure(ExposureRequest(mode: nil, bias: 1), sim, defaults)
        #expect(bias.exposure.mode == .continuous && bias.exposure.bias == 1, "bias keeps the mode")
        #expect(throws: SessionError.unsupported("exposure mode 'custom'", supported: ["continuous"])) {
            try SettingsValidation.exposure(ExposureRequest(mode: "custom"), fixed, DeviceSettings(for: fixed))
        }
        #expect(throws: SessionError.invalidValue("duration and iso apply to custom or locked exposure")) {
            try SettingsValidation.exposure(ExposureRequest(mode: "auto", iso: 100), sim, defaults)
        }
        // A lock at given values (a saved lock replayed): clamped as custom's are.
        let locked = try SettingsValidation.exposure(ExposureRequest(mode: "locked", duration: 0.01, iso: 10), sim, defaults)
        #expect(locked.exposure.mode == .locked && locked.exposure.duration == 0.01 && locked.exposure.iso == 50)
    }

    @Test func whiteBalanceTorchAndOrientation() throws {
        #expect(try SettingsValidation.whiteBalance(WhiteBalanceRequest(mode: nil, temperature: 99999), sim, defaults).whiteBalance
            == WhiteBalanceSetting(mode: .locked, temperature: 7500))
        #expect(throws: SessionError.torchUnavailable) { try SettingsValidation.torch(TorchRequest(mode: "on"), fixed, defaults) }
        #expect(try SettingsValidation.torch(TorchRequest(mode: "on"), sim, defaults).torch.level == 1, "on means some light")
        #expect(throws: SessionError.self) { try SettingsValidation.orientation(OrientationRequest(rotation: 45), OrientationSetting()) }
    }

    @Test(arguments: [
        ("1280x720", nil as Int?, "1280x720@30"), ("photo", 15, "1920x1080@15"), ("low", nil, "352x288@30"),
        ("1000x1000", nil, "1280x720@30"), ("medium", 29, "640x480@30"),
    ])
    func presetsResolveToTheClosestFormat(_ preset: String, _ fps: Int?, _ expected: String) throws {
        let formats = [(352, 288), (640, 480), (1280, 720), (1920, 1080)].map {
            FormatOption(pixelFormat: .yuyv, width: $0.0, height: $0.1, fps: [30, 15])
        }
        if Preset(preset) == nil {
            #expect(throws: SessionError.self) {
                try FormatResolution.resolve(PrepareRequest(preset: preset), formats: formats, currentPreset: "high", currentFps: 30)
            }
            return
        }
        let f = try FormatResolution.resolve(PrepareRequest(preset: preset, fps: fps), formats: formats, currentPreset: "high", currentFps: 30).format
        #expect("\(f.width)x\(f.height)@\(f.fps)" == expected)
    }

    /// A size asked for by width and height is reported as `"WxH"`: a later prepare that names
    /// no size or preset keeps it (it was refused as an unknown preset), one naming an unknown
    /// preset is still refused.
    @Test func aSizeAskedForStaysTheCurrentPreset() throws {
        let formats = [(640, 480), (800, 600), (1280, 720)].map { FormatOption(pixelFormat: .yuyv, width: $0.0, height: $0.1, fps: [30, 15]) }
        let sized = try FormatResolution.resolve(PrepareRequest(width: 800, height: 600), formats: formats, currentPreset: "high", currentFps: 30)
        #expect(sized.preset == "800x600")
        let again = try FormatResolution.resolve(PrepareRequest(fps: 15), formats: formats, currentPreset: sized.preset, currentFps: 30)
        #expect(again.format == VideoFormat(pixelFormat: .yuyv, width: 800, height: 600, fps: 15) && again.preset == "800x600")
        #expect(throws: SessionError.self) {
            try FormatResolution.resolve(PrepareRequest(preset: "800x600"), formats: formats, currentPreset: "high", currentFps: 30)
        }
    }
}

extension WhiteBalanceSetting {
    init(mode: WhiteBalanceMode, temperature: Double) { self.init(); self.mode = mode; self.temperature = temperature }
}
