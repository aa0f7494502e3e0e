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
    /// What is staged in the scene: the scene's own motion on or off, a walker (SceneStaging).
    public let staging = SceneStaging()
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
        let source = frameSource(format: format)
        let t = PacedCaptureThread(name: "synthetic-\(descriptor.id)", fps: format.fps) { seq, ts in
            source.frame(sequence: seq, timestamp: ts, handler)
        }
        running.withLock { $0 = (t, source.buffers) }
    }

    /// This camera's frames made on demand, for a caller that paces them itself (a test, a
    /// benchmark: an hour of frames in minutes). Shares the camera's sensor, codes and staging;
    /// not for use while the camera runs.
    public func frameSource(format: VideoFormat) -> SyntheticFrameSource {
        let label = descriptor.position == .unspecified ? descriptor.id.uppercased()
                                                         : descriptor.position.rawValue.uppercased()
        return SyntheticFrameSource(kind: scene, label: label, format: format, sensor: sensor, codes: codes,
                                    staging: staging, timecode: timecodeShown, noiseOn: noiseOn,
                                    seed: descriptor.position == .front ? 2 : 1)
    }

    public func stop() {
        let r = running.withLock { r -> (thread: PacedCaptureThread, buffers: BufferBox)? in defer { r = nil }; return r }
        r?.thread.stop()  // the buffers are freed after the thread's last frame
    }
}

/// Draws a synthetic camera's frames: the scene (its own motion, the staged walker, the codes)
/// through the simulated lens and exposure, the sensor's noise, then the caption and timecode.
/// Used by one thread at a time (the camera's capture thread, or a test's).
public final class SyntheticFrameSource: @unchecked Sendable {
    let buffers: BufferBox
    private let format: VideoFormat
    private let scene: SyntheticScene
    private let canvas: YUYVCanvas
    private let renderer: SceneRenderer
    private let sensor: SensorModel
    private let codes: CodeBoard
    private let staging: SceneStaging
    private let timecode: Locked<Bool>, noiseOn: Locked<Bool>
    private let noise: SensorNoise
    /// The scene's own clock: it advances with the frames while the scene moves, and holds
    /// while it is still (so a still scene resumes where it stopped).
    private var sceneSequence: UInt64 = 0

    init(kind: SyntheticSceneKind, label: String, format: VideoFormat, sensor: SensorModel, codes: CodeBoard,
         staging: SceneStaging, timecode: Locked<Bool>, noiseOn: Locked<Bool>, seed: UInt64) {
        self.format = format
        scene = SyntheticScene(kind: kind, label: label, width: format.width, height: format.height)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: format.width * format.height * 2, alignment: 16)
        buffers = BufferBox(buffer)
        canvas = YUYVCanvas(buffer, width: format.width, height: format.height)
        renderer = SceneRenderer(scene: scene, canvas: canvas)
        self.sensor = sensor
        self.codes = codes
        self.staging = staging
        self.timecode = timecode
        self.noiseOn = noiseOn
        noise = SensorNoise(seed: seed)
    }

    /// Draws frame `sequence`, exposed at `timestamp` (Unix seconds), and hands it to `body`
    /// (valid during the call: the next frame is drawn into the same buffer).
    public func frame(sequence seq: UInt64, timestamp ts: Double, _ body: (borrowing RawFrame) -> Void) {
        var iso = 100.0
        let staged = staging.current()
        let walker = staged.walker?.figure(at: ts, width: format.width, height: format.height)
        // The codes and the walker are drawn before the lens: focus matters.
        renderer.render(sequence: sceneSequence, codes: codes.current, walker: walker) {
            let optics = sensor.step(sceneLuma: $0, width: format.width)
            iso = optics.iso
            return optics
        }
        if staged.moving { sceneSequence += 1 }
        let buffer = buffers.buffer
        if noiseOn.withLock({ $0 }) { noise.apply(to: buffer.baseAddress!, bytes: buffer.count, sequence: seq, iso: iso) }
        scene.drawCaption(canvas, sequence: seq, timestamp: ts)
        if timecode.withLock({ $0 }) {  // after the sensor: clean levels, whatever the exposure
            Timecode.draw(on: canvas, milliseconds: UInt64(max(0, (ts * 1000).rounded(.down))), sequence: seq)
        }
        body(RawFrame(format: format, bytes: UnsafeRawBufferPointer(buffer), stride: format.width * 2, sequence: seq, timestamp: ts))
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
