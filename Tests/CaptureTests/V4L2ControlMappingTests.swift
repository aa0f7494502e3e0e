import CV4L2
import Glibc
import Foundation
import CameraCore
import Testing
@testable import Capture

/// A fake control seam: answers VIDIOC_QUERYCTRL from a table and records every write, in
/// order, like swift-system's mocking trace.
final class FakeControlIO: ControlIO {
    var table: [DeviceControl]
    var values: [UInt32: Int]
    var trace: [(id: UInt32, value: Int)] = []
    var refuse: Set<UInt32> = []

    init(_ table: [DeviceControl]) {
        self.table = table
        values = Dictionary(table.map { ($0.id, $0.defaultValue) }) { a, _ in a }
    }

    func controls() -> [DeviceControl] { table }
    func get(_ id: UInt32) throws(CameraError) -> Int { values[id] ?? 0 }
    func set(_ id: UInt32, _ value: Int) throws(CameraError) {
        if refuse.contains(id) { throw .system(call: "VIDIOC_S_CTRL", errno: EBUSY) }
        trace.append((id, value))
        values[id] = value
    }
}

func cid(_ v: Int32) -> UInt32 { UInt32(bitPattern: v) }

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
    @Test func c920Capabilities() {
        let caps = V4L2ControlMapping(c920).capabilities
        #expect(caps.zoom == ZoomCapability(min: 1, max: 5, optical: true))
        #expect(caps.focusModes == ["locked", "auto", "continuous"] && caps.lensPosition)
        #expect(caps.exposureModes == ["locked", "auto", "continuous", "custom"])
        #expect(caps.exposureDuration == Range(min: 0.0003, max: 0.2047))
        #expect(caps.iso != nil, "gain stands in for ISO")
        #expect(caps.exposureBias == nil)
        #expect(caps.whiteBalanceModes == ["locked", "auto", "continuous"])
        #expect(caps.whiteBalanceTemperature == Range(min: 2000, max: 6500))
        #expect(caps.torch == false)
    }

    @Test func reportsOnlyWhatTheDeviceHas() {
        let caps = V4L2ControlMapping([c920[0]]).capabilities  // brightness only
        #expect(caps.zoom.optical == false && caps.focusModes == ["locked"] && !caps.lensPosition)
        #expect(caps.exposureModes == ["continuous"] && caps.whiteBalanceModes == ["continuous"] && !caps.torch)
    }

    func writes(_ table: [DeviceControl], _ edit: (inout DeviceSettings) -> Void) -> [(UInt32, Int)] {
        let io = FakeControlIO(table)
        var s = DeviceSettings(for: V4L2ControlMapping(table).capabilities)
        edit(&s)
        _ = V4L2ControlMapping(table).apply(s, to: io)
        return io.trace.map { ($0.id, $0.value) }
    }

    func index(_ w: [(UInt32, Int)], _ id: Int32) -> Int? { w.firstIndex { $0.0 == cid(id) } }

    @Test func lockedFocusTurnsAutofocusOffFirstAndSnapsToTheStep() {
        let w = writes(c920) { $0.focus.mode = "locked"; $0.focus.lensPosition = 0.51 }
        let off = index(w, V4L2_CID_FOCUS_AUTO), abs = index(w, V4L2_CID_FOCUS_ABSOLUTE)
        #expect(off != nil && abs != nil && off! < abs!, "FOCUS_AUTO=0 before FOCUS_ABSOLUTE")
        #expect(w[off!].1 == 0)
        #expect(w[abs!].1 == 125, "0.51 × 250 = 127.5 → 128 → step 5 → 125")
    }

    @Test func continuousFocusTurnsAutofocusOnAndWritesNoLensPosition() {
        let w = writes(c920) { $0.focus.mode = "continuous" }
        #expect(w.contains { $0 == (cid(V4L2_CID_FOCUS_AUTO), 1) })
        #expect(index(w, V4L2_CID_FOCUS_ABSOLUTE) == nil)
    }

    @Test func customExposureIsManualFirstClampedAndUsesGainForISO() {
        let w = writes(c920) { $0.exposure.mode = "custom"; $0.exposure.duration = 1.0; $0.exposure.iso = 200 }
        let manual = index(w, V4L2_CID_EXPOSURE_AUTO), abs = index(w, V4L2_CID_EXPOSURE_ABSOLUTE)
        #expect(manual != nil && abs != nil && manual! < abs!)
        #expect(w[manual!].1 == 1, "Manual Mode")
        #expect(w[abs!].1 == 2047, "1 s = 10000 × 100 µs, clamped to the maximum")
        #expect(w.contains { $0 == (cid(V4L2_CID_GAIN), 128) }, "ISO 200 = twice the default gain")
    }

    @Test func continuousExposureUsesAperturePriorityOnAWebcam() {
        let w = writes(c920) { $0.exposure.mode = "continuous" }
        #expect(w.contains { $0 == (cid(V4L2_CID_EXPOSURE_AUTO), 3) })
        #expect(index(w, V4L2_CID_EXPOSURE_ABSOLUTE) == nil)
    }

    @Test func lockedWhiteBalanceTurnsAutoOffBeforeTheTemperature() {
        let w = writes(c920) { $0.whiteBalance.mode = "locked"; $0.whiteBalance.temperature = 9000 }
        let off = index(w, V4L2_CID_AUTO_WHITE_BALANCE), t = index(w, V4L2_CID_WHITE_BALANCE_TEMPERATURE)
        #expect(off != nil && t != nil && off! < t!)
        #expect(w[t!].1 == 6500, "clamped")
    }

    @Test func zoomFactorMapsOntoZoomAbsolute() {
        #expect(writes(c920) { $0.zoom.factor = 2.5 }.contains { $0 == (cid(V4L2_CID_ZOOM_ABSOLUTE), 250) })
        #expect(writes(c920) { $0.zoom.factor = 9 }.contains { $0 == (cid(V4L2_CID_ZOOM_ABSOLUTE), 500) })
    }

    @Test func torchIsTheFlashLEDInTorchMode() {
        let caps = V4L2ControlMapping(flashCamera).capabilities
        #expect(caps.torch && caps.iso == Range(min: 0, max: 1600) && caps.exposureBias == Range(min: -4, max: 4))
        let on = writes(flashCamera) { $0.torch.mode = "on"; $0.torch.level = 1 }
        #expect(on.contains { $0 == (cid(V4L2_CID_FLASH_LED_MODE), 2) })
        let off = writes(flashCamera) { $0.torch.mode = "off" }
        #expect(off.contains { $0 == (cid(V4L2_CID_FLASH_LED_MODE), 0) })
        let bias = writes(flashCamera) { $0.exposure.bias = 1.5 }
        #expect(bias.contains { $0 == (cid(V4L2_CID_AUTO_EXPOSURE_BIAS), 1500) })
    }

    @Test func aRefusedControlDoesNotStopTheOthers() {
        let io = FakeControlIO(c920)
        io.refuse = [cid(V4L2_CID_FOCUS_AUTO)]
        var s = DeviceSettings(for: V4L2ControlMapping(c920).capabilities)
        s.whiteBalance.mode = "locked"
        let errors = V4L2ControlMapping(c920).apply(s, to: io)
        #expect(errors.count == 1)
        #expect(io.trace.contains { $0.id == cid(V4L2_CID_WHITE_BALANCE_TEMPERATURE) })
    }

    @Test func aLEDClassDeviceIsTheTorch() throws {
        let base = NSTemporaryDirectory() + "vf-leds-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: base + "/white:flash", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: base + "/white:flash/max_brightness", contents: Data("255\n".utf8))
        _ = FileManager.default.createFile(atPath: base + "/white:flash/brightness", contents: Data("0\n".utf8))
        defer { try? FileManager.default.removeItem(atPath: base) }
        let camera = V4L2Camera(id: "cam", path: "/nonexistent/video9", formats: [], torchLED: LEDTorch(name: "white:flash", base: base))
        #expect(camera.capabilities.torch, "the LED makes a torch")
        var s = DeviceSettings(for: camera.capabilities)
        s.torch.mode = "on"; s.torch.level = 0.5
        camera.apply(s)
        #expect(try String(contentsOfFile: base + "/white:flash/brightness", encoding: .utf8) == "128\n")
        s.torch.mode = "off"
        camera.apply(s)
        #expect(try String(contentsOfFile: base + "/white:flash/brightness", encoding: .utf8) == "0\n")
        #expect(V4L2Camera(id: "x", path: "/nonexistent", formats: [], torchLED: LEDTorch(name: "none", base: base)).capabilities.torch == false)
    }

    @Test func controlKeysFollowV4l2Ctl() {
        #expect(c920[8].key == "zoom_absolute")
        #expect(c920[1].key == "white_balance_temperature_auto")
        #expect(c920[5].key == "exposure_absolute")
    }
}
