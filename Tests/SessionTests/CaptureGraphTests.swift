// The capture graph (issue 36): a session's outputs are added once and kept across runs and
// format changes, each told when a run starts and ends — one output object, figures that add
// up, settings that stay — and the state shows inputs, outputs and the connections between
// them. Over a stateful webcam model at the ioctl seam. (A switch between cameras is between
// sessions: MultiCamSessionTests.)

import CV4L2
import CameraCore
import Capture
import CaptureTestSupport
import Foundation
import Testing
@testable import Session

@Suite(.serialized) struct CaptureGraphTests {
    func camera(_ id: String, _ fake: FakeWebcam, _ sizes: [(Int, Int)], _ position: CameraDescriptor.Position) -> V4L2Camera {
        V4L2Camera(id: id, path: "/dev/\(id)", name: id, position: position,
                   formats: sizes.map { FormatOption(pixelFormat: .yuyv, width: $0.0, height: $0.1, fps: [30]) },
                   open: { path throws(CameraError) in try fake.open(path) })
    }

    func photo(_ s: CaptureSession) async throws -> EncodedFrame {
        try #require(await s.capture(quality: 80).frame(timeout: TestTime.patience * TestTime.scale))
    }

    func report(_ s: CaptureSession, _ kind: OutputKind) async -> OutputReport? {
        await s.state().outputs.first { $0.type == kind }
    }

    @Test func outputsAreKeptAcrossRunsAndFormatChanges() async throws {
        let rear = camera("rear", FakeWebcam.c920(), [(1280, 720), (640, 480)], .rear)
        let s = try CaptureSession(camera: rear, configuration: SessionConfiguration(preset: "1280x720", readBackInterval: 0.1))
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

        // A format change: the new run reaches the same outputs, at its own size, and the
        // connections are the same input's. Another camera is refused: it is another session's.
        let changed = try await s.prepare(PrepareRequest(preset: "640x480"))
        #expect(changed.inputs == [InputReport(device: "rear", mediaType: .video)])
        #expect(changed.connections.allSatisfy { $0.input == "rear" && $0.enabled })
        await #expect(throws: SessionError.self) { try await s.prepare(PrepareRequest(camera: "front")) }
        let viewer = s.hub.addViewer(maxFps: 0)
        let after = s.hub.latestFrame?.sequence ?? 0
        let frame = await s.hub.nextFrame(after: after, timeout: TestTime.patience * TestTime.scale)
        s.hub.removeViewer(viewer)
        #expect(frame?.width == 640, "the preview encodes the new format's frames")
        #expect(try await photo(s).width == 640)
        #expect(await report(s, .photo)?.framesIn == 3)
        #expect(s.graph.outputs.map(ObjectIdentifier.init) == outputs, "the same output objects, added once")
        await s.stop()
    }
}
