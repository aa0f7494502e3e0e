// The simulator's stand-in camera: renders a moving scene as raw YUYV at the requested size
// and rate, so its frames take exactly the path a V4L2 camera's frames take.

import Barcodes
import CameraCore
import Foundation
import SystemSupport

public final class SyntheticCamera: CaptureDevice, Sendable {
    public let descriptor: CameraDescriptor
    public let scene: SyntheticSceneKind
    /// The capture thread and the frame buffer it draws into, while running.
    private let running = Locked<(thread: PacedCaptureThread, buffers: BufferBox)?>(nil)
    private let sensor: SensorModel
    /// Codes shown in the scene (QR, EAN-13, Code 128), drawn into every frame.
    private let codes = CodeBoard()
    /// Whether the top rows carry the machine-readable timecode (Timecode.swift).
    private let timecodeShown = Locked(false)

    public static let sizes: [(Int, Int)] = [(160, 120), (320, 240), (352, 288), (640, 480),
                                              (1280, 720), (1920, 1080), (3840, 2160)]

    public init(id: String, position: CameraDescriptor.Position, scene: SyntheticSceneKind? = nil) {
        let name = "Synthetic \(position == .unspecified ? id : position.rawValue) camera"
        descriptor = CameraDescriptor(id: id, name: name, position: position, kind: .synthetic)
        let kind = scene ?? (position == .front ? .person : .bars)
        self.scene = kind
        sensor = SensorModel(capabilities: .simulated, subjectDepth: kind == .bars ? 0.3 : 0.4,
                             depthAt: { SyntheticScene.depth(kind: kind, at: $0) })
    }

    /// What the scene shows.
    public var sceneCodes: [SceneCode] { codes.current.map(\.code) }

    /// Shows `list` from the next frame on (all or nothing: a code that cannot be drawn
    /// changes nothing).
    public func setSceneCodes(_ list: [SceneCode]) throws(SymbolError) {
        var placed: [PlacedCode] = []
        for code in list { placed.append(try PlacedCode(code)) }
        codes.current = placed
    }

    /// The frame's capture time and sequence in the top rows of every frame from the next one
    /// on (`cameras[].timecode`), for latency measured in decoded pixels.
    public var timecode: Bool {
        get { timecodeShown.withLock { $0 } }
        set { timecodeShown.withLock { $0 = newValue } }
    }

    /// The sensor's shot and read noise at the exposure's ISO (SensorNoise), from the next frame
    /// on (`synthetic.noise`, `cameras[].noise`; default on): off, a flat test card.
    public var noise: Bool {
        get { noiseOn.withLock { $0 } }
        set { noiseOn.withLock { $0 = newValue } }
    }
    private let noiseOn = Locked(true)

    /// The simulated sensor takes every validated value as it is; it has no lens zoom.
    public func apply(_ change: SettingsChange) throws(CameraError) -> DeviceSettings {
        sensor.apply(change.new, runAutoFocus: change.runAutoFocus)
        var accepted = sensor.report(change.new)
        accepted.zoom.optical = 1
        return accepted
    }

    /// Where the simulated 3A loops have got to.
    public func readBack(_ settings: DeviceSettings) -> DeviceSettings? { sensor.report(settings) }

    public var capabilities: Capabilities { .simulated }

    public var formats: [FormatOption] {
        Self.sizes.map { FormatOption(pixelFormat: .yuyv, width: $0.0, height: $0.1, fps: [60, 30, 15, 5]) }
    }

    public func start(format: VideoFormat, handler: @escaping FrameHandler) throws(CameraError) {
        guard format.pixelFormat == .yuyv,
              formats.contains(where: { $0.width == format.width && $0.height == format.height }),
              (1...60).contains(format.fps) else {
            throw .unsupportedFormat("\(format.width)x\(format.height)@\(format.fps) \(format.pixelFormat.rawValue)")
        }
        stop()
        let label = descriptor.position == .unspecified ? descriptor.id.uppercased()
                                                         : descriptor.position.rawValue.uppercased()
        let scene = SyntheticScene(kind: self.scene, label: label, width: format.width, height: format.height)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: format.width * format.height * 2,
                                                            alignment: 16)
        let canvas = YUYVCanvas(buffer, width: format.width, height: format.height)
        let box = BufferBox(buffer)
        let sensor = self.sensor
        let renderer = SceneRenderer(scene: scene, canvas: canvas)
        let codes = self.codes, timecode = self.timecodeShown
        let noise = SensorNoise(seed: descriptor.position == .front ? 2 : 1), noiseOn = self.noiseOn
        let t = PacedCaptureThread(name: "synthetic-\(descriptor.id)", fps: format.fps) { seq, ts in
            // The codes are drawn before the lens: focus matters.
            var iso = 100.0
            renderer.render(sequence: seq, codes: codes.current) {
                let optics = sensor.step(sceneLuma: $0, width: format.width)
                iso = optics.iso
                return optics
            }
            if noiseOn.withLock({ $0 }) { noise.apply(to: box.buffer.baseAddress!, bytes: box.buffer.count, sequence: seq, iso: iso) }
            scene.drawCaption(canvas, sequence: seq, timestamp: ts)
            if timecode.withLock({ $0 }) {  // after the sensor: clean levels, whatever the exposure
                Timecode.draw(on: canvas, milliseconds: UInt64(max(0, (ts * 1000).rounded(.down))), sequence: seq)
            }
            handler(RawFrame(format: format, bytes: UnsafeRawBufferPointer(box.buffer),
                             stride: format.width * 2, sequence: seq, timestamp: ts))
        }
        running.withLock { $0 = (t, box) }
    }

    public func stop() {
        let r = running.withLock { r -> (thread: PacedCaptureThread, buffers: BufferBox)? in defer { r = nil }; return r }
        r?.thread.stop()  // the buffers are freed after the thread's last frame
    }
}

/// The scene's codes, shared by the camera (which sets them) and its capture thread.
final class CodeBoard: Sendable {
    private let codes = Locked<[PlacedCode]>([])
    var current: [PlacedCode] {
        get { codes.withLock { $0 } }
        set { codes.withLock { $0 = newValue } }
    }
}

/// Owns a frame buffer that a capture thread draws into; freed when the camera lets go.
final class BufferBox: @unchecked Sendable {
    let buffer: UnsafeMutableRawBufferPointer
    init(_ buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }
    deinit { buffer.deallocate() }
}
