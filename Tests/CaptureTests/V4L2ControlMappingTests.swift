import CV4L2
import Glibc
import Foundation
import CameraCore
import Testing
@testable import Capture
import CaptureTestSupport

/// Controls as a Logitech C920 reports them (v4l2-ctl -L).
let c920: [DeviceControl] = [
    DeviceControl(id: cid(V4L2_CID_BRIGHTNESS), name: "Brightness", kind: .integer, minimum: 0, maximum: 255, defaultValue: 128),
    DeviceControl(id: cid(V4L2_CID_AUTO_WHITE_BALANCE), name: "White Balance Temperature, Auto", kind: .boolean, minimum: 0, maximum: 1, defaultValue: 1),
    DeviceControl(id: cid(V4L2_CID_GAIN), name: "Gain", kind: .integer, minimum: 0, maximum: 255, defaultValue: 64),
    DeviceControl(id: cid(V4L2_CID_WHITE_BALANCE_TEMPERATURE), name: "White Balance Temperature", kind: .integer, minimum: 2000, maximum: 6500, defaultValue: 4000),
    DeviceControl(id: cid(V4L2_CID_EXPOSURE_AUTO), name: "Exposure, Auto", kind: .menu, minimum: 0, maximum: 3, defaultValue: 3,
                  menu: [1: "Manual Mode", 3: "Aperture Priority Mode"]),
    DeviceControl(id: cid(V4L2_CID_EXPOSURE_ABSOLUTE), name: "Exposure (Absolute)", kind: .integer, minimum: 3, maximum: 2047, defaultValue: 250),
    DeviceControl(id: cid(V4L2_CID_FOCUS_ABSOLUTE), name: "Focus (absolute)", kind: .integer, minimum: 0, maximum: 250, step: 5, defaultValue: 0),
    DeviceControl(id: cid(V4L2_CID_FOCUS_AUTO), name: "Focus, Auto", kind: .boolean, minimum: 0, maximum: 1, defaultValue: 1),
    DeviceControl(id: cid(V4L2_CID_ZOOM_ABSOLUTE), name: "Zoom, Absolute", kind: .integer, minimum: 100, maximum: 500, defaultValue: 100),
]

/// A camera module with ISO, exposure bias and a flash LED that can be a torch.
let flashCamera: [DeviceControl] = [
    DeviceControl(id: cid(V4L2_CID_EXPOSURE_AUTO), name: "Auto Exposure", kind: .menu, minimum: 0, maximum: 1, defaultValue: 0,
                  menu: [0: "Auto Mode", 1: "Manual Mode"]),
    DeviceControl(id: cid(V4L2_CID_EXPOSURE_ABSOLUTE), name: "Exposure Time, Absolute", kind: .integer, minimum: 1, maximum: 10000, defaultValue: 1000),
    DeviceControl(id: cid(V4L2_CID_ISO_SENSITIVITY), name: "ISO Sensitivity", kind: .integerMenu, minimum: 0, maximum: 1600, defaultValue: 0),
    DeviceControl(id: cid(V4L2_CID_AUTO_EXPOSURE_BIAS), name: "Auto Exposure, Bias", kind: .integerMenu, minimum: -4000, maximum: 4000, defaultValue: 0),
    DeviceControl(id: cid(V4L2_CID_FLASH_LED_MODE), name: "LED Mode", kind: .menu, minimum: 0, maximum: 2, defaultValue: 0,
                  menu: [0: "Off", 1: "Flash", 2: "Torch"]),
]

@Suite struct V4L2ControlMappingTests {
    /// Values land on the nearest step inside the range, as the V4L2 core and uvcvideo put
    /// them (focus_absolute 0…255 step 5; a range whose top is off the step grid).
    @Test(arguments: [(102, 100), (103, 105), (153, 155), (-7, 0), (300, 255), (254, 255), (252, 250)])
    func clampTakesTheNearestStep(_ v: Int, _ want: Int) {
        let focus = DeviceControl(id: 1, name: "Focus, Absolute", kind: .integer, minimum: 0, maximum: 255, step: 5, defaultValue: 0)
        #expect(focus.clamp(v) == want)
        let odd = DeviceControl(id: 2, name: "Odd", kind: .integer, minimum: 1, maximum: 10, step: 4, defaultValue: 1)
        #expect(odd.clamp(10) == 9 && odd.clamp(8) == 9 && odd.clamp(6) == 5 && odd.clamp(2) == 1)
    }

    @Test func c920Capabilities() {
        let caps = V4L2ControlMapping(c920).capabilities
        #expect(caps.zoom == ZoomCapability(min: 1, max: 20, optical: true, opticalMax: 5), "a 5× lens, then 4× crop")
        #expect(caps.focusModes == [.locked, .auto, .continuous] && caps.lensPosition)
        #expect(caps.exposureModes == [.locked, .auto, .continuous, .custom])
        #expect(caps.exposureDuration == Range(min: 0.0003, max: 0.2047))
        #expect(caps.iso == Range(min: 100, max: 3200), "gain stands in for ISO")
        #expect(caps.exposureBias == nil)
        #expect(caps.whiteBalanceModes == [.locked, .auto, .continuous])
        #expect(caps.whiteBalanceTemperature == Range(min: 2000, max: 6500))
        #expect(caps.torch == false)
    }

    @Test func reportsOnlyWhatTheDeviceHas() {
        let caps = V4L2ControlMapping([c920[0]]).capabilities  // brightness only
        #expect(caps.zoom.optical == false && caps.zoom.opticalMax == 1 && caps.focusModes == [.locked] && !caps.lensPosition)
        #expect(caps.exposureModes == [.continuous] && caps.whiteBalanceModes == [.continuous] && !caps.torch)
    }

    /// The writes a change from the camera's defaults makes, in order.
    func writes(_ table: [DeviceControl], _ edit: (inout DeviceSettings) -> Void) -> [(UInt32, Int)] {
        let mapping = V4L2ControlMapping(table)
        let old = DeviceSettings(for: mapping.capabilities)
        var new = old
        edit(&new)
        return mapping.writes(for: SettingsChange(old: old, new: new)).map { ($0.id, $0.value) }
    }

    func index(_ w: [(UInt32, Int)], _ id: Int32) -> Int? { w.firstIndex { $0.0 == cid(id) } }

    @Test func lockedFocusTurnsAutofocusOffFirstAndClampsToTheRange() {
        let w = writes(c920) { $0.focus.mode = .locked; $0.focus.lensPosition = 0.51 }
        let off = index(w, V4L2_CID_FOCUS_AUTO), abs = index(w, V4L2_CID_FOCUS_ABSOLUTE)
        #expect(off != nil && abs != nil && off! < abs!, "FOCUS_AUTO=0 before FOCUS_ABSOLUTE")
        #expect(w[off!].1 == 0)
        #expect(w[abs!].1 == 130, "0.51 × 250 = 127.5 → 128 → the nearest step of 5, 130 (as the driver rounds)")
        #expect(w.count == 2, "nothing else: only what changed")
    }

    @Test func continuousFocusFromLockedTurnsAutofocusOnAndWritesNoLensPosition() {
        let mapping = V4L2ControlMapping(c920)
        var old = DeviceSettings(for: mapping.capabilities)
        old.focus.mode = .locked
        var new = old
        new.focus.mode = .continuous
        let w = mapping.writes(for: SettingsChange(old: old, new: new))
        #expect(w == [V4L2ControlMapping.Write(id: cid(V4L2_CID_FOCUS_AUTO), value: 1)])
    }

    @Test func customExposureIsManualFirstClampedAndUsesGainForISO() {
        let w = writes(c920) { $0.exposure.mode = .custom; $0.exposure.duration = 1.0; $0.exposure.iso = 200 }
        let manual = index(w, V4L2_CID_EXPOSURE_AUTO), abs = index(w, V4L2_CID_EXPOSURE_ABSOLUTE)
        #expect(manual != nil && abs != nil && manual! < abs!)
        #expect(w[manual!].1 == 1, "Manual Mode")
        #expect(w[abs!].1 == 2047, "1 s = 10000 × 100 µs, clamped to the maximum")
        #expect(w.contains { $0 == (cid(V4L2_CID_GAIN), 8) }, "ISO 200 on 100…3200 over gain 0…255")
    }

    @Test func anUnrelatedChangeWritesNoExposureOrFocusControl() {
        #expect(writes(c920) { $0.whiteBalance.mode = .locked; $0.whiteBalance.temperature = 3000 }
            .allSatisfy { $0.0 == cid(V4L2_CID_AUTO_WHITE_BALANCE) || $0.0 == cid(V4L2_CID_WHITE_BALANCE_TEMPERATURE) })
        #expect(writes(c920) { $0.orientation.rotation = 90 }.isEmpty, "orientation is the pipeline's")
        #expect(writes(c920) { $0.zoom.factor = 8 }.isEmpty, "the factor is the session's; only zoom.optical reaches the lens")
    }

    @Test func aFullWriteAfterStreamOnWritesEveryGroup() {
        let mapping = V4L2ControlMapping(c920)
        let w = mapping.writes(for: SettingsChange(old: nil, new: DeviceSettings(for: mapping.capabilities))).map { ($0.id, $0.value) }
        for id in [V4L2_CID_ZOOM_ABSOLUTE, V4L2_CID_FOCUS_AUTO, V4L2_CID_EXPOSURE_AUTO, V4L2_CID_AUTO_WHITE_BALANCE] {
            #expect(index(w, id) != nil)
        }
    }

    @Test func lockedWhiteBalanceTurnsAutoOffBeforeTheTemperature() {
        let w = writes(c920) { $0.whiteBalance.mode = .locked; $0.whiteBalance.temperature = 9000 }
        let off = index(w, V4L2_CID_AUTO_WHITE_BALANCE), t = index(w, V4L2_CID_WHITE_BALANCE_TEMPERATURE)
        #expect(off != nil && t != nil && off! < t!)
        #expect(w[t!].1 == 6500, "clamped")
    }

    @Test func opticalZoomMapsOntoZoomAbsolute() {
        #expect(writes(c920) { $0.zoom.optical = 2.5 }.contains { $0 == (cid(V4L2_CID_ZOOM_ABSOLUTE), 250) })
        #expect(writes(c920) { $0.zoom.optical = 9 }.contains { $0 == (cid(V4L2_CID_ZOOM_ABSOLUTE), 500) })
    }

    @Test func torchIsTheFlashLEDInTorchMode() {
        let caps = V4L2ControlMapping(flashCamera).capabilities
        #expect(caps.torch && caps.iso == Range(min: 1, max: 1600) && caps.exposureBias == Range(min: -4, max: 4))
        let on = writes(flashCamera) { $0.torch.mode = .on; $0.torch.level = 1 }
        #expect(on.contains { $0 == (cid(V4L2_CID_FLASH_LED_MODE), 2) })
        let bias = writes(flashCamera) { $0.exposure.bias = 1.5 }
        #expect(bias.count == 1 && bias[0] == (cid(V4L2_CID_AUTO_EXPOSURE_BIAS), 1500), "only the bias changed")
    }

    @Test func aLEDClassDeviceIsTheTorch() throws {
        let base = NSTemporaryDirectory() + "vf-leds-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: base + "/white:flash", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: base + "/white:flash/max_brightness", contents: Data("255\n".utf8))
        _ = FileManager.default.createFile(atPath: base + "/white:flash/brightness", contents: Data("0\n".utf8))
        defer { try? FileManager.default.removeItem(atPath: base) }
        let camera = V4L2Camera(id: "cam", path: "/nonexistent/video9", formats: [], torchLED: LEDTorch(name: "white:flash", base: base))
        #expect(camera.capabilities.torch, "the LED makes a torch")
        let off = DeviceSettings(for: camera.capabilities)
        var on = off
        on.torch.mode = .on; on.torch.level = 0.5
        _ = try camera.apply(SettingsChange(old: off, new: on))
        #expect(try String(contentsOfFile: base + "/white:flash/brightness", encoding: .utf8) == "128\n")
        _ = try camera.apply(SettingsChange(old: on, new: off))
        #expect(try String(contentsOfFile: base + "/white:flash/brightness", encoding: .utf8) == "0\n")
        #expect(V4L2Camera(id: "x", path: "/nonexistent", formats: [], torchLED: LEDTorch(name: "none", base: base)).capabilities.torch == false)
    }

    @Test func controlKeysFollowV4l2Ctl() {
        #expect(c920[8].key == "zoom_absolute")
        #expect(c920[1].key == "white_balance_temperature_auto")
        #expect(c920[5].key == "exposure_absolute")
    }
}
