// The session driving a V4L2 camera over a stateful Logitech C920 model at the ioctl seam,
// without sockets: what each call does to the device and to the pixels, and what the state
// then says.

import CV4L2
import CameraCore
import Capture
import CaptureTestSupport
import Foundation
import Glibc
import JPEG
import SystemSupport
import Testing
@testable import Session

@Suite(.serialized) struct SessionOnFakeC920Tests {
    func session(_ fake: FakeWebcam, _ timekeeper: any Timekeeper = SystemTimekeeper()) async throws -> CaptureSession {
        try await Self.session(fake, timekeeper)
    }

    /// A running session on the C920 model (also ContinuousMoveTests'); `readBack` 0: none.
    static func session(_ fake: FakeWebcam, _ timekeeper: any Timekeeper, readBack: Double = 0.1) async throws -> CaptureSession {
        let camera = V4L2Camera(id: "c920", path: "/dev/fake0", name: "HD Pro Webcam C920",
                                formats: [FormatOption(pixelFormat: .yuyv, width: 640, height: 480, fps: [30])],
                                open: { path throws(CameraError) in try fake.open(path) })
        let s = try CaptureSession(camera: camera, configuration: SessionConfiguration(preset: "640x480", readBackInterval: readBack),
                                   timekeeper: timekeeper)
        try await s.start()
        return s
    }

    /// The mean width of the bars across the middle of a photo, in pixels.
    func barWidth(_ s: CaptureSession) async throws -> Double {
        let ticket = try await s.capture(quality: 90)
        let frame = try #require(await ticket.frame(timeout: TestTime.patience * TestTime.scale))
        let image = try JPEGDecoder.decodeRGB(frame.jpeg)
        let y = image.height / 2
        var runs: [Int] = [], run = 0, last: Bool?
        for x in image.width / 4..<(3 * image.width / 4) {
            let bright = image.pixel(x: x, y: y).g > 128
            if bright == last { run += 1 } else { if last != nil { runs.append(run) }; run = 1; last = bright }
        }
        runs = Array(runs.dropFirst())  // the first run is cut by the window
        return runs.isEmpty ? Double(image.width / 2) : Double(runs.reduce(0, +)) / Double(runs.count)
    }

    /// The preview's encode reads the camera's own buffer (lent, not copied) and gives it back
    /// after: with the buffers the camera asks for, the driver always has one to fill, so no
    /// exposure is lost, and the pictures are whole (the bars of the model, 6 px wide).
    @Test func theEncodeReadsTheCamerasBufferAndCaptureNeverStarves() async throws {
        let fake = FakeWebcam.c920()
        let s = try await session(fake)
        let viewer = s.hub.addViewer(maxFps: 0)  // someone watches: every frame is encoded
        var last: UInt64 = 0, frames: [EncodedFrame] = []
        while frames.count < 60, let f = await s.hub.nextFrame(after: last, timeout: TestTime.patience * TestTime.scale) {
            frames.append(f)
            last = f.sequence
        }
        s.hub.removeViewer(viewer)
        let handoffs = s.previewHandoffs
        #expect(frames.count == 60)
        #expect(handoffs.copied == 0 && handoffs.lent >= 60, "\(handoffs)")
        let lending = (s.camera as! V4L2Camera).lending
        #expect(lending == ProcessInfo.processInfo.activeProcessorCount + 1, "by default: one per core, one waiting")
        #expect(fake.buffers == lending + 3, "REQBUFS: what the camera lends (a core's encode each, one waiting) + 3 for the driver")
        #expect(fake.starved == 0, "exposures lost for want of a queued buffer")
        #expect(fake.mostLent <= lending + 1, "at most one per encode thread, one waiting, one in the callback")
        let image = try JPEGDecoder.decodeRGB(frames.last!.jpeg)
        var edges = 0
        for x in 1..<image.width where (image.pixel(x: x, y: 240).g > 128) != (image.pixel(x: x - 1, y: 240).g > 128) { edges += 1 }
        #expect((100...110).contains(edges), "whole 6 px bars: \(edges) edges across 640 px")
        await s.stop()
    }

    @Test func twoTimesMovesTheLensAndCropsNothing() async throws {
        let fake = FakeWebcam.c920()
        let s = try await session(fake)
        let base = try await barWidth(s)
        let state = try await s.zoom(ZoomRequest(factor: 2))
        #expect(fake.value("zoom_absolute") == 200, "the lens moved at once")
        #expect(state.zoom.factor == 2 && state.zoom.optical == 2 && state.zoom.digital == 1)
        let zoomed = try await barWidth(s)
        #expect(abs(zoomed / base - 2) < 0.3, "2×, not 4×: bars \(base) → \(zoomed) px")
        await s.stop()
    }

    @Test func tenTimesOnAFiveTimesLensIsOpticalFiveThenDigitalTwo() async throws {
        let fake = FakeWebcam.c920()
        let s = try await session(fake)
        let base = try await barWidth(s)
        let state = try await s.zoom(ZoomRequest(factor: 10))
        #expect(fake.value("zoom_absolute") == 500)
        #expect(state.zoom.optical == 5 && state.zoom.digital == 2 && state.zoom.factor == 10)
        let zoomed = try await barWidth(s)
        #expect(abs(zoomed / base - 10) < 1.5, "bars \(base) → \(zoomed) px")
        await s.stop()
    }

    /// A ramp on the session's clock (a ManualTimekeeper the test moves half a second at a
    /// time): 3 doublings at 1 a second. At each moment the lens has had exactly the curve's
    /// step (zoom_absolute = 100 × the factor, up to the lens's 5) and the state says the
    /// curve's factor; at 3 s the ramp is over, the lens at its end and the crop beyond it.
    @Test func aRampStepsTheLensAndCropsOnlyBeyondIt() async throws {
        let fake = FakeWebcam.c920(), clock = ManualTimekeeper()
        let s = try await session(fake, clock)
        fake.clearWrites()
        _ = try await s.zoom(ZoomRequest(factor: 8, rate: 1))
        var expected: [Int] = []
        for half in 1...5 {
            #expect(await clock.waitForSleepers(), "the lens stepper waits for its next frame")
            clock.advance(by: 0.5)
            let t = Double(half) / 2
            expected.append(Int((min(5, exp2(t)) * 100).rounded()))
            #expect(await clock.waitForSleepers(), "it stepped, and waits again")
            let lens = fake.writes.filter { $0.key == "zoom_absolute" }.map(\.value)
            #expect(lens == expected, "at \(t) s the lens has had \(lens)")
            let state = await s.state()
            #expect(state.zoom.ramping && state.zoom.factor == (exp2(t) * 1000).rounded() / 1000,
                    "at \(t) s: factor \(state.zoom.factor), ramping \(state.zoom.ramping)")
        }
        clock.advance(by: 0.5)
        // At 3 s the curve is at its end; the stepper finds the lens there, writes nothing and
        // ends (a wait for that task: bounded, polled).
        let deadline = TestTime.deadline(10)
        while await s.state().zoom.ramping && Date() < deadline { try await Task.sleep(nanoseconds: 5_000_000) }
        #expect(fake.writes.filter { $0.key == "zoom_absolute" }.map(\.value) == [141, 200, 283, 400, 500])
        let state = await s.state()
        #expect(!state.zoom.ramping && state.zoom.factor == 8 && state.zoom.optical == 5 && state.zoom.digital == 1.6,
                "\(state.zoom)")
        #expect(clock.sleeping == 0, "the stepper is done")
        await s.stop()
    }

    @Test func autofocusRunsOncePerFocusRequestAndNeverForTheTorchOrExposure() async throws {
        let fake = FakeWebcam.c920()
        let s = try await session(fake)
        _ = try await s.focus(FocusRequest(mode: "locked"))
        fake.clearWrites()
        _ = try await s.focus(FocusRequest(mode: "auto"))
        _ = try await s.focus(FocusRequest(mode: "auto"))
        #expect(fake.writes.filter { $0.key == "focus_automatic_continuous" }.count == 2, "once per request")
        fake.clearWrites()
        _ = try await s.exposure(ExposureRequest(mode: "custom", duration: 0.01))
        _ = try await s.whiteBalance(WhiteBalanceRequest(mode: "locked", temperature: 3000))
        _ = try await s.orientation(OrientationRequest(rotation: 90))
        #expect(!fake.writes.contains { $0.key.hasPrefix("focus") })
        #expect(fake.writes.map(\.key) == ["auto_exposure", "exposure_time_absolute", "gain", "white_balance_automatic", "white_balance_temperature"])
        await s.stop()
    }

    /// A one-shot autofocus (AUTO_FOCUS_START) runs once per `auto` request — a scan the user
    /// asked for — and never because the torch, exposure or white balance changed.
    @Test func aOneShotAutofocusRunsPerRequestAndNeverForTheTorch() async throws {
        let fake = FakeWebcam.autofocusModule()
        let s = try await session(fake)
        #expect(s.camera.capabilities.focusModes.contains(.auto))
        _ = try await s.focus(FocusRequest(mode: "auto"))
        fake.clearWrites()
        _ = try await s.focus(FocusRequest(mode: "auto"))
        _ = try await s.focus(FocusRequest(mode: "auto"))
        #expect(fake.writes.map(\.key) == ["auto_focus_start", "auto_focus_start"], "one scan per request: \(fake.writes)")
        fake.clearWrites()
        _ = try await s.torch(TorchRequest(mode: "on", level: 0.5))
        _ = try await s.exposure(ExposureRequest(mode: "custom", duration: 0.01, iso: 200))
        _ = try await s.torch(TorchRequest(mode: "off"))
        #expect(!fake.writes.isEmpty, "the torch and exposure were written: \(fake.writes)")
        #expect(!fake.writes.contains { $0.key.contains("focus") }, "no focus write for the torch or exposure: \(fake.writes)")
        #expect(fake.value("led_mode") == 0)
        await s.stop()
    }

    /// The same refusal as a user meets it on a C920: a lens position while continuous
    /// autofocus holds the lens is EACCES from uvcvideo. Writing it through the raw controls
    /// call (which does not switch autofocus off) is refused naming the control, nothing moves.
    @Test func aLockedControlIsRefusedNamingItAndNothingMoves() async throws {
        let fake = FakeWebcam.c920()
        let s = try await session(fake)
        let before = await s.state()
        await #expect(throws: SessionError.camera(.refused(control: "focus_absolute", value: 120, errno: EACCES))) {
            try await s.setControls(["focus_absolute": 120])
        }
        #expect(fake.value("focus_absolute") == 0 && fake.value("focus_automatic_continuous") == 1)
        #expect(await s.state().focus == before.focus)
        await s.stop()
    }

    @Test func aRefusedWriteAnswersAnErrorAndLeavesTheStateAsItWas() async throws {
        let fake = FakeWebcam.c920()
        let s = try await session(fake)
        let before = await s.state()
        fake.stall("white_balance_temperature")
        await #expect(throws: SessionError.camera(.refused(control: "white_balance_temperature", value: 3000, errno: EILSEQ))) {
            try await s.whiteBalance(WhiteBalanceRequest(mode: "locked", temperature: 3000))
        }
        let after = await s.state()
        #expect(after.whiteBalance == before.whiteBalance)
        #expect(fake.value("white_balance_automatic") == 1, "auto white balance back on")
        await s.stop()
    }

    /// After a stream-on (the C920 resets its controls there) every setting is written again;
    /// one the camera now refuses does not undo the others, and the state shows what the
    /// camera kept for it (its default), not what was asked.
    @Test func aRefusalAtStreamOnLeavesTheOtherSettingsOnAndTheStateTrue() async throws {
        let fake = FakeWebcam.c920()
        let s = try await session(fake)
        _ = try await s.zoom(ZoomRequest(factor: 2))
        _ = try await s.whiteBalance(WhiteBalanceRequest(mode: "locked", temperature: 3000))
        _ = try await s.focus(FocusRequest(mode: "locked", lensPosition: 0.4))
        await s.stop()
        fake.stall("white_balance_temperature")
        try await s.start()
        #expect(fake.value("zoom_absolute") == 200 && fake.value("focus_absolute") == 100, "the rest written again")
        #expect(fake.value("white_balance_temperature") == 4000, "the camera kept its default")
        let state = await s.state()
        #expect(state.zoom.optical == 2 && state.focus.mode == .locked)
        #expect(state.whiteBalance.temperature == 4000, "the state tells the truth: \(state.whiteBalance)")
        await s.stop()
    }

    @Test func theStateIsReadBackAfterClampingAndStepping() async throws {
        let fake = FakeWebcam.c920()
        let s = try await session(fake)
        let state = try await s.focus(FocusRequest(mode: "locked", lensPosition: 0.4))
        #expect(fake.value("focus_absolute") == 100, "0.4 of 255 is 102, stepped by the camera to 100")
        #expect(state.focus.lensPosition == 0.392, "100 of 255, not the 0.4 asked")
        await s.stop()
    }

    @Test func aZoomChangedOnTheCameraShowsInTheStateAndAsAnEvent() async throws {
        let fake = FakeWebcam.c920()
        let s = try await session(fake)
        let events = s.events.subscription(initial: [])
        events.attach {}
        defer { events.cancel() }
        fake.setFromOutside("zoom_absolute", 300)
        let deadline = TestTime.deadline(3)
        var seen: SessionState?
        while seen == nil && Date() < deadline {
            if case .item(.state(let st)) = events.next(), st.zoom.optical == 3 { seen = st }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        #expect(seen?.zoom.factor == 3)
        #expect(await s.state().zoom.optical == 3)
        await s.stop()
    }
}
