// AVFoundation's settings through libcamera's controls, against a pipeline that behaves as a
// Camera Module 3's does (FakeLibcameraPipeline: a setting carried by a request four frames
// on, on the sensor two frames late, exposure in whole lines, gain in the sensor's codes,
// AE/AF/AWB choosing for themselves): what the session is
// told is what the metadata says, not what was asked; capabilities are only what the
// ControlInfoMap has; a refusal names the control and puts back what the change had set.

import CameraCore
import Capture
import CaptureTestSupport
import Glibc
import Testing

@Suite struct LibcameraControlMappingTests {
    let pi = LibcameraControlMapping(FakeLibcameraPipeline.cameraModule3, pixelArray: (4608, 2592))

    @Test func capabilitiesAreWhatTheControlInfoMapHas() {
        let c = pi.capabilities
        #expect(c.focusModes == [.locked, .auto, .continuous] && c.lensPosition && c.focusPointOfInterest)
        #expect(c.exposureModes == [.locked, .auto, .continuous, .custom])
        #expect(c.exposureDuration == Range(min: 26e-6, max: 0.220417))
        #expect(c.iso == Range(min: 112, max: 1600) && c.exposureBias == Range(min: -8, max: 8))
        #expect(c.whiteBalanceModes == [.locked, .continuous] && c.whiteBalanceTemperature == nil,
                "the rpi handler has AwbEnable and ColourGains, no ColourTemperature to set")
        #expect(!c.torch && !c.zoom.optical)

        // vimc's map has only the picture adjustments: a fixed camera, and those as its controls.
        let vimc = LibcameraControlMapping(FakeLibcameraPipeline.vimc)
        #expect(vimc.capabilities == .fixed)
        let controls = vimc.adjustmentControls { _ in nil }
        #expect(controls.map(\.key) == ["brightness", "contrast", "saturation"])
        #expect(controls.first.map { ($0.minimum, $0.maximum, $0.defaultValue, $0.value) } ?? (0, 0, 0, nil) == (-1000, 1000, 0, 0))
    }

    func settings(_ body: (inout DeviceSettings) -> Void) -> DeviceSettings {
        var s = DeviceSettings(for: pi.capabilities)
        body(&s)
        return s
    }

    @Test func customExposureIsReadBackAsTheSensorQuantizedIt() throws {
        let camera = FakeLibcameraPipeline()
        let old = settings { _ in }
        let new = settings { $0.exposure.mode = .custom; $0.exposure.duration = 0.01; $0.exposure.iso = 400 }
        let read = try pi.apply(SettingsChange(old: old, new: new), to: camera, timeout: 1)
        #expect(camera.sets.map(\.0) == ["AeEnable", "ExposureTime", "AnalogueGain"])
        #expect(camera.applied("ExposureTime") == [10_000] && camera.applied("AnalogueGain") == [4])
        // 10 ms is 701 whole lines of 14.26 µs; gain 4 is code 768 exactly.
        #expect(read.exposure.duration == 0.009996 && read.exposure.iso == 400, "\(read.exposure)")
        #expect(read.exposure.mode == .custom)
    }

    @Test func automaticModesReportWhatTheAlgorithmsChose() throws {
        let camera = FakeLibcameraPipeline()
        let custom = settings { $0.exposure.mode = .custom; $0.whiteBalance.mode = .locked; $0.focus.mode = .locked }
        _ = try pi.apply(SettingsChange(old: nil, new: custom), to: camera, timeout: 1)
        let auto = settings { $0.exposure.mode = .continuous; $0.whiteBalance.mode = .continuous; $0.focus.mode = .continuous }
        let read = try pi.apply(SettingsChange(old: custom, new: auto), to: camera, timeout: 1)
        #expect(camera.sets.suffix(3).map(\.0) == ["AfMode", "AeEnable", "AwbEnable"])
        #expect(abs(read.exposure.duration - FakeLibcameraPipeline.aeExposure) < FakeLibcameraPipeline.lineTime)
        #expect(read.exposure.iso == 250 && read.whiteBalance.temperature == FakeLibcameraPipeline.awbTemperature)
        #expect(read.focus.lensPosition == 0.931, "AF's 2.2 dioptres of 32")
    }

    @Test func theLensIsInDioptresAndReadBackAsAVFoundationsPosition() throws {
        let camera = FakeLibcameraPipeline()
        let new = settings { $0.focus.mode = .locked; $0.focus.lensPosition = 0.25 }
        let read = try pi.apply(SettingsChange(old: nil, new: new), to: camera, timeout: 1)
        #expect(camera.applied("AfMode") == [0] && camera.applied("LensPosition") == [24], "0.25 of the way to infinity: 24 of 32 dioptres")
        #expect(read.focus.lensPosition == 0.25)
        // Infinity is 0 dioptres, AVFoundation's 1.
        let far = try pi.apply(SettingsChange(old: read, new: settings { $0.focus.mode = .locked; $0.focus.lensPosition = 1 }),
                               to: camera, timeout: 1)
        #expect(camera.applied("LensPosition") == [0] && far.focus.lensPosition == 1)
    }

    @Test func tapToFocusMetersAWindowInsideTheSensorAndScans() throws {
        let camera = FakeLibcameraPipeline()
        let old = settings { $0.focus.mode = .locked }
        var new = old
        new.focus.mode = .auto
        new.focus.point = Point(x: 0.95, y: 0.1)
        let read = try pi.apply(SettingsChange(old: old, new: new, runAutoFocus: true), to: camera, timeout: 1)
        #expect(camera.sets.map(\.0) == ["AfMetering", "AfWindows", "AfMode", "AfTrigger"])
        // A fifth of 4608x2592, centred on the point but kept inside: its right edge at the sensor's.
        #expect(camera.applied("AfWindows") == [3686, 0, 922, 518], "\(camera.applied("AfWindows") ?? [])")
        for _ in 0..<FakeLibcameraPipeline.scanFrames { camera.frame() }
        let after = pi.read(read, from: camera)
        #expect(after.focus.lensPosition == 0.931 && after.focus.mode == .auto)
    }

    @Test func unchangedSettingsWriteNothingAndAStartWritesAll() {
        let s = settings { $0.exposure.mode = .custom }
        #expect(pi.writes(for: SettingsChange(old: s, new: s)).isEmpty)
        let all = pi.writes(for: SettingsChange(old: nil, new: s)).map(\.name)
        #expect(all == ["AfMetering", "AfWindows", "AfMode", "AeEnable", "ExposureTime", "AnalogueGain", "ExposureValue", "AwbEnable"])
        // Values outside the map's ranges are clamped before they are set, as V4L2's are.
        let far = settings { $0.exposure.mode = .custom; $0.exposure.iso = 6400 }
        #expect(pi.writes(for: SettingsChange(old: s, new: far)) == [.init("AnalogueGain", [16])])
    }

    @Test func aRefusalNamesTheControlAndPutsBackWhatTheChangeSet() throws {
        let camera = FakeLibcameraPipeline()
        let old = settings { $0.exposure.mode = .custom; $0.exposure.duration = 0.02; $0.exposure.iso = 100 }
        _ = try pi.apply(SettingsChange(old: nil, new: old), to: camera, timeout: 1)
        camera.refuse("AnalogueGain")  // its range moved with a sensor mode the map has not caught up with
        let had = camera.get("ExposureTime")
        var new = old
        new.exposure.duration = 0.005
        new.exposure.iso = 800
        #expect(throws: CameraError.refused(control: "AnalogueGain", value: 8, errno: ERANGE)) {
            try pi.apply(SettingsChange(old: old, new: new), to: camera, timeout: 1)
        }
        // 5 ms was set, then the time the sensor had (its whole lines, from the metadata) again.
        #expect(had?.fromMetadata == true && camera.sets.suffix(2).map(\.0) == ["ExposureTime", "ExposureTime"])
        #expect(camera.sets.last?.1 == had?.values && camera.sets.last?.1 == [19_993])
    }

    @Test func aControlTheCameraLacksIsNotWritten() {
        let vimc = LibcameraControlMapping(FakeLibcameraPipeline.vimc)
        let s = DeviceSettings(for: vimc.capabilities)
        #expect(vimc.writes(for: SettingsChange(old: nil, new: s)).isEmpty)
        #expect(throws: CameraError.unsupportedControl("AeEnable", known: [])) {
            try FakeLibcameraPipeline(FakeLibcameraPipeline.vimc).set("AeEnable", [0])
        }
    }

    @Test func theFrameRateIsFrameDurationLimitsInItsRange() {
        #expect(pi.frameDuration(fps: 15) == .init("FrameDurationLimits", [66_667, 66_667]))
        #expect(pi.frameDuration(fps: 60) == .init("FrameDurationLimits", [33_333, 33_333]), "its fastest mode is 30 fps")
        #expect(LibcameraControlMapping(FakeLibcameraPipeline.vimc).frameDuration(fps: 30) == nil)
    }

    @Test func aWaitThatEndsFirstAnswersWhatWasAskedNotTheMetadataBefore() throws {
        let camera = FakeLibcameraPipeline()
        let old = settings { $0.exposure.mode = .custom; $0.exposure.duration = 0.02 }
        _ = try pi.apply(SettingsChange(old: nil, new: old), to: camera, timeout: 1)
        var new = old
        new.exposure.duration = 0.005
        // One frame's wait: the request carrying 5 ms is four frames away.
        let read = try pi.apply(SettingsChange(old: old, new: new), to: camera, timeout: 1 / FakeLibcameraPipeline.fps)
        #expect(read.exposure.duration == 0.005, "not the 20 ms the last metadata still says: \(read.exposure.duration)")
        #expect(camera.get("ExposureTime")?.values == [19_993])
        for _ in 0..<FakeLibcameraPipeline.depth { camera.frame() }
        #expect(pi.read(read, from: camera).exposure.duration == 0.004991, "then the sensor's whole lines of 5 ms")
    }
}
