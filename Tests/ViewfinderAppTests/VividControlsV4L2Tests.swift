// The session's control path on the kernel's vivid driver, which has the shape of many
// sensor drivers (ov5640…): automatic gain and a volatile gain, no exposure controls.
// Real ioctls; a tracing shim at the ioctl seam records which controls each call writes.

import CameraCore
import Capture
import Foundation
import Session
import SystemSupport
import Testing

/// In V4L2Tests' serialized suite: vivid's nodes can be streamed by one test at a time.
extension V4L2Tests {
    /// The real device, with every S_CTRL recorded by key.
    final class TracingPort: V4L2Port, @unchecked Sendable {  // one owner at a time, like the fd it wraps
        let inner: V4L2Device
        let trace: Trace
        private let names: [UInt32: String]
        init(_ inner: V4L2Device, trace: Trace) {
            self.inner = inner
            self.trace = trace
            names = Dictionary(inner.controls().map { ($0.id, $0.key) }) { a, _ in a }
        }
        var path: String { inner.path }
        var bytesPerLine: Int { inner.bytesPerLine }
        func controls() -> [DeviceControl] { inner.controls() }
        func get(_ id: UInt32) throws(CameraError) -> Int { try inner.get(id) }
        func set(_ id: UInt32, _ value: Int) throws(CameraError) {
            try inner.set(id, value)
            trace.writes.withLock { $0.append((names[id] ?? "\(id)", value)) }
        }
        func setFormat(_ want: VideoFormat) throws(CameraError) -> VideoFormat { try inner.setFormat(want) }
        func startStreaming(bufferCount: Int) throws(CameraError) { try inner.startStreaming(bufferCount: bufferCount) }
        func withNextFrame(timeoutMs: Int32, _ body: (UnsafeRawBufferPointer, UInt64, Double, FrameLease?) -> Void) throws(CameraError) -> Bool {
            try inner.withNextFrame(timeoutMs: timeoutMs, body)
        }
        func close() { inner.close() }
    }

    final class Trace: Sendable {
        let writes = Locked<[(key: String, value: Int)]>([])
        var keys: [String] { writes.withLock { $0.map(\.key) } }
        func clear() { writes.withLock { $0 = [] } }
    }

    func withSession(_ body: (CaptureSession, Trace, String) async throws -> Void) async throws {
        let device = try #require(Self.devices.first)
        let trace = Trace()
        let camera = V4L2Camera(id: "vivid", path: device, open: { path throws(CameraError) in
            TracingPort(try V4L2Device(path: path), trace: trace)
        })
        let session = try CaptureSession(camera: camera, configuration: SessionConfiguration(preset: "640x480", fps: 15, readBackInterval: 0.2))
        try await session.start()
        do { try await body(session, trace, device) } catch { await session.stop(); throw error }
        await session.stop()
    }

    func getControl(_ device: String, _ control: String) throws -> Int? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/v4l2-ctl")
        p.arguments = ["-d", device, "--get-ctrl=\(control)"]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        p.waitUntilExit()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return text.split(separator: ":").last.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    @Test func customISOTurnsAutogainOffAndWritesGainOnce() async throws {
        try await withSession { session, trace, device in
            let caps = session.camera.capabilities
            #expect(caps.exposureModes.contains(.custom) && caps.iso != nil, "gain is the ISO path on vivid")
            trace.clear()
            let s = try await session.exposure(ExposureRequest(mode: "custom", iso: 800))
            #expect(trace.keys == ["gain_automatic", "gain"], "\(trace.keys)")
            #expect(try getControl(device, "gain_automatic") == 0)
            let gain = try #require(try getControl(device, "gain"))
            #expect(s.exposure.mode == .custom)
            #expect(abs(s.exposure.iso - (100 + Double(gain) / 255 * 3100).rounded()) < 1, "the state is the gain read back")
        }
    }

    @Test func anUnrelatedCallWritesNoControl() async throws {
        try await withSession { session, trace, _ in
            _ = try await session.exposure(ExposureRequest(mode: "custom", iso: 400))
            trace.clear()
            _ = try await session.orientation(OrientationRequest(rotation: 90))
            _ = try await session.zoom(ZoomRequest(factor: 2))
            #expect(trace.keys.isEmpty, "\(trace.keys)")
        }
    }

    @Test func continuousExposureReportsVividsOwnVolatileGain() async throws {
        try await withSession { session, _, device in
            _ = try await session.exposure(ExposureRequest(mode: "continuous"))
            #expect(try getControl(device, "gain_automatic") == 1)
            var seen = Set<Double>()
            let deadline = Date().addingTimeInterval(8)
            while seen.count < 2 && Date() < deadline {
                seen.insert(await session.state().exposure.iso)
                try await Task.sleep(nanoseconds: 200_000_000)
            }
            #expect(seen.count >= 2, "vivid moves its gain under autogain, and the state follows: \(seen)")
        }
    }
}
