// The saved state on a V4L2 camera (the C920 model at the ioctl seam): what only the camera
// itself holds — its own controls set by key, a locked exposure's time — is saved and put on
// a camera that comes back at its defaults (a power cut), before its first frame.

import CameraCore
import Capture
import CaptureTestSupport
import Foundation
import Logging
import Session
import SystemSupport
import Testing
@testable import ViewfinderApp

@Suite(.serialized) struct StateOnFakeC920Tests {
    let dir = NSTemporaryDirectory() + "vf-state-c920-\(UUID().uuidString)"

    /// The server's order on one camera: read the state, replay it, start, follow.
    func serve(_ fake: FakeWebcam) async throws -> (CaptureSession, StateKeeper) {
        let camera = V4L2Camera(id: "c920", path: "/dev/fake0", name: "HD Pro Webcam C920",
                                formats: [FormatOption(pixelFormat: .yuyv, width: 640, height: 480, fps: [30])],
                                open: { path throws(CameraError) in try fake.open(path) })
        let events = EventHub()
        let session = try CaptureSession(camera: camera, configuration: SessionConfiguration(preset: "640x480", readBackInterval: 0.1),
                                         events: events)
        let cameras = MultiCamSession(sessions: [session], main: 0, events: events)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let keeper = StateKeeper(file: StateFile(path: dir + "/state.json"), logger: logger)
        await keeper.restore(cameras, configuredMain: "c920", autostart: (main: true, own: []))
        if keeper.runs(.mainView, configured: true) { try await session.start() }
        await keeper.follow(cameras)
        return (session, keeper)
    }

    @Test func itsOwnControlsAndALockedExposureAreOnTheCameraAgainAfterAPowerCut() async throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = FakeWebcam.c920()
        var (s, keeper) = try await serve(first)
        _ = try await s.setControls(["brightness": 200])
        let deadline = TestTime.deadline(3)
        while (first.value("exposure_time_absolute") ?? 250) == 250 && Date() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
        let locked = try await s.exposure(ExposureRequest(mode: "locked"))
        let held = try #require(first.value("exposure_time_absolute"))
        #expect(held != 250)
        keeper.close()  // the last change on disk, as at a stop
        await s.stop()

        let second = FakeWebcam.c920()  // at its defaults: brightness 128, exposure 250 under its automatic mode
        (s, keeper) = try await serve(second)
        #expect(second.value("brightness") == 200 && second.value("exposure_time_absolute") == held)
        #expect(second.value("auto_exposure") == 1, "manual: the lock")
        let state = await s.state()
        #expect(state.controls == ["brightness": 200] && state.exposure.mode == .locked)
        #expect(state.exposure.duration == locked.exposure.duration)
        #expect(keeper.report.dropped.isEmpty, "\(keeper.report.dropped)")
        keeper.close()
        await s.stop()
    }
}
