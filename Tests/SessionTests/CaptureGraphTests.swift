// The capture graph (issue 36): a session's outputs are added once and kept across runs,
// format changes and switches, each told when a run starts and ends — one output object,
// figures that add up, settings that stay — and the state shows inputs, outputs and the
// connections between them. Over two stateful webcam models at the ioctl seam, one session
// switching between them (as the rear/front pair does).

import CV4L2
import CameraCore
import Capture
import CaptureTestSupport
import Foundation
import Testing
@testable import Session

@Suite(.serialized) struct CaptureGraphTests {
    func camera(_ id: String, _ fake: FakeWebcam, _ w: Int, _ h: Int, _ position: CameraDescriptor.Position) -> V4L2Camera {
        V4L2Camera(id: id, path: "/dev/\(id)", name: id, position: position,
                   formats: [FormatOption(pixelFormat: .yuyv, width: w, height: h, fps: [30])],
                   open: { path throws(CameraError) in try fake.open(path) })
    }

    func photo(_ s: CaptureSession) async throws -> EncodedFrame {
        try #require(await s.capture(quality: 80).frame(timeout: TestTime.patience * TestTime.scale))
    }

    func report(_ s: CaptureSession, _ kind: OutputKind) async -> OutputReport? {
        await s.state().outputs.first { $0.type == kind }
    }

    @Test func outputsAreKeptAcrossRunsFormatChangesAndSwitches() async throws {
        let rear = camera("rear", FakeWebcam.c920(), 1280, 720, .rear)
        let front = camera("front", FakeWebcam.c920(), 640, 480, .front)
        let s = try CaptureSession(cameras: [rear, front], configuration: SessionConfiguration(readBackInterval: 0.1))
        let outputs = s.graph.outputs.map(ObjectIdentifier.init)

        // Before any run: every output, idle; every connection from the video input, enabled.
        let idle = await s.state()
        #expect(idle.outputs.map(\.type) == [.preview, .photo, .live, .liveSub, .liveVP8, .motion, .metadata, .movie])
        #expect(idle.inputs == [InputReport(device: "rear", mediaType: .video)])
        #expect(idle.connections == idle.outputs.map { CaptureConnection(input: "rear", output: $0.type, mediaType: .video, enabled: true) })
        await #expect(throws: SessionError.notRunning) { try await s.capture(quality: 80) }

        // Two runs of one camera: one photo output, its figures add up.
        try await s.start()
        #expect(try await photo(s).width == 1280)
        await s.stop()
        #expect(await report(s, .photo)?.framesIn == 1)
        _ = try await s.setMotion(MotionChange(enabled: true, threshold: 0.3))
        try await s.start()
        #expect(try await photo(s).width == 1280)
        #expect(await report(s, .photo)?.framesIn == 2, "the second run's photo adds to the first's")
        #expect(await s.state().motion.enabled && s.graph.motion.settings.threshold == 0.3, "settings made between runs stay")

        // A switch: the new camera's run reaches the same outputs, at its own size, and the
        // connections are the new input's.
        let switched = try await s.prepare(PrepareRequest(camera: "front"))
        #expect(switched.inputs == [InputReport(device: "front", mediaType: .video)])
        #expect(switched.connections.allSatisfy { $0.input == "front" && $0.enabled })
        let viewer = s.hub.addViewer(maxFps: 0)
        let after = s.hub.latestFrame?.sequence ?? 0
        let frame = await s.hub.nextFrame(after: after, timeout: TestTime.patience * TestTime.scale)
        s.hub.removeViewer(viewer)
        #expect(frame?.width == 640, "the preview encodes the new camera's frames")
        #expect(try await photo(s).width == 640)
        #expect(await report(s, .photo)?.framesIn == 3)
        #expect(s.graph.outputs.map(ObjectIdentifier.init) == outputs, "the same output objects, added once")
        await s.stop()
    }
}
