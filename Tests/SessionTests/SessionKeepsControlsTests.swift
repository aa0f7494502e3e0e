// What a camera forgets at every stream-on (the C920 resets its controls there, and a
// replugged camera is at its defaults) the session puts back: the camera's own controls set
// by key, and a locked exposure's values — on the C920 model at the ioctl seam.

import CV4L2
import CameraCore
import Capture
import CaptureTestSupport
import Foundation
import SystemSupport
import Testing
@testable import Session

@Suite(.serialized) struct SessionKeepsControlsTests {
    @Test func aControlSetByKeyIsKeptAndWrittenAgainAfterStreamOn() async throws {
        let fake = FakeWebcam.c920()
        let s = try await SessionOnFakeC920Tests.session(fake, SystemTimekeeper())
        _ = try await s.setControls(["brightness": 200, "zoom_absolute": 300])
        var state = await s.state()
        #expect(state.controls == ["brightness": 200], "a setting's own control is that setting's: \(state.controls)")
        #expect(state.zoom.optical == 3)
        await s.stop()
        try await s.start()  // STREAMON: the model is back at its defaults, then written again
        #expect(fake.value("brightness") == 200 && fake.value("zoom_absolute") == 300)
        state = await s.state()
        #expect(state.controls == ["brightness": 200])
        // Changed from outside (v4l2-ctl): the state follows the device, and so does what is kept.
        fake.setFromOutside("brightness", 90)
        let deadline = TestTime.deadline(3)
        while await s.state().controls["brightness"] != 90 && Date() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
        #expect(await s.state().controls == ["brightness": 90])
        await s.stop()
    }

    @Test func aControlTheCameraLacksIsRefusedAndNothingIsKept() async throws {
        let fake = FakeWebcam.c920()
        let s = try await SessionOnFakeC920Tests.session(fake, SystemTimekeeper())
        await #expect(throws: SessionError.self) { try await s.setControls(["brightness": 10, "hue": 3]) }
        #expect(await s.state().controls.isEmpty)
        #expect(fake.value("brightness") == 128, "nothing written")
        await s.stop()
    }

    /// A camera locked from the start (a sensor driver: exposure in lines, no automatic mode)
    /// holds no values of its own yet: nothing is written over its driver's at stream-on.
    @Test func aCameraLockedFromTheStartKeepsItsDriversExposure() async throws {
        let fake = FakeWebcam.piCamera()
        let camera = V4L2Camera(id: "pi", path: "/dev/fake0", name: "imx219", formats: [FormatOption(pixelFormat: .yuyv, width: 640, height: 480, fps: [30])],
                                open: { path throws(CameraError) in try fake.open(path) })
        let s = try CaptureSession(camera: camera, configuration: SessionConfiguration(preset: "640x480", readBackInterval: 0))
        #expect(await s.state().exposure.mode == .locked)
        try await s.start()
        #expect(fake.value("exposure") == 1000 && fake.value("analogue_gain") == 16, "the driver's own, not 1/60 s at ISO 100")
        #expect(!fake.writes.map(\.key).contains("exposure"))
        await s.stop()
    }

    /// Motions and a setting's own controls are not kept: written again after a replug, a
    /// relative step or a speed would move the camera again.
    @Test func onlyStatesNoSettingStandsForAreKept() {
        func c(_ id: Int32, _ name: String, _ kind: DeviceControl.Kind = .integer) -> DeviceControl {
            DeviceControl(id: cid(id), name: name, kind: kind, minimum: -10, maximum: 10, defaultValue: 0)
        }
        let mapping = V4L2ControlMapping([c(V4L2_CID_BRIGHTNESS, "Brightness"), c(V4L2_CID_PAN_SPEED, "Pan, Speed"),
                                          c(V4L2_CID_TILT_RELATIVE, "Tilt, Relative"), c(V4L2_CID_PAN_RESET, "Pan, Reset", .button),
                                          c(V4L2_CID_ISO_SENSITIVITY, "ISO Sensitivity"), c(V4L2_CID_GAIN, "Gain"),
                                          c(V4L2_CID_ZOOM_ABSOLUTE, "Zoom, Absolute")])
        let kept = mapping.keptByKey(["brightness", "pan_speed", "tilt_relative", "pan_reset", "iso_sensitivity", "gain", "zoom_absolute"])
        // Gain stands for nothing where the device has ISO; a zoom from 0 is not the zoom setting's.
        #expect(Set(kept.map(\.key)) == ["brightness", "gain", "zoom_absolute"], "\(kept.map(\.key))")
    }

    /// A lock holds what the camera had when it was locked — after a stream-on too, where the
    /// C920 would otherwise come back at its default exposure time.
    @Test func aLockedExposureHoldsItsValuesAcrossAStreamOn() async throws {
        let fake = FakeWebcam.c920()
        let s = try await SessionOnFakeC920Tests.session(fake, SystemTimekeeper())
        // Its automatic exposure moves the time on every frame (200…249): read back, then locked.
        let deadline = TestTime.deadline(3)
        while (fake.value("exposure_time_absolute") ?? 250) == 250 && Date() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
        let locked = try await s.exposure(ExposureRequest(mode: "locked"))
        let held = try #require(fake.value("exposure_time_absolute"))
        #expect(held != 250, "the automatic mode's value")
        await s.stop()
        fake.clearWrites()
        try await s.start()
        #expect(fake.value("exposure_time_absolute") == Int((locked.exposure.duration * 10_000).rounded()))
        let after = await s.state()
        #expect(after.exposure.mode == .locked && after.exposure.duration == locked.exposure.duration)
        #expect(fake.writes.map(\.key).contains("exposure_time_absolute"), "put back after the stream-on")
        // And a lock at values asked for (a saved state's replay) writes them.
        let asked = try await s.exposure(ExposureRequest(mode: "locked", duration: 0.01))
        #expect(fake.value("exposure_time_absolute") == 100 && asked.exposure.mode == .locked && asked.exposure.duration == 0.01)
        await s.stop()
    }
}
