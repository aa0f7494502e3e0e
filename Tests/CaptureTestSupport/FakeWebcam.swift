// Stateful models of real cameras at the ioctl seam (V4L2Port), for tests on any machine.
// They behave like the devices, not like recorders: a Logitech C920 as uvcvideo drives it
// refuses focus_absolute with EACCES while focus_automatic_continuous is 1 (and exposure
// and white balance the same way under their automatic modes), clamps and rounds values to
// the control's step, refuses menu entries it does not offer with EINVAL, and resets every
// control at STREAMON; its picture obeys zoom_absolute. A Raspberry Pi camera module has
// exposure in lines, analogue gain and a flash LED, and no automatic modes.

import CV4L2
import CameraCore
import Foundation
import Glibc
import SystemSupport
import Capture

public func cid(_ v: Int32) -> UInt32 { UInt32(bitPattern: v) }

/// One physical camera: its controls live here, shared by every open handle.
public final class FakeWebcam: Sendable {
    public struct Model: Sendable {
        public var controls: [DeviceControl]
        /// (manual control, its automatic mode, the mode's value that allows manual writes)
        public var locks: [(value: UInt32, mode: UInt32, manualWhen: Int)]
        public var resetAtStreamOn: Bool
        public var formats: [(Int, Int)]
    }

    public let model: Model
    private struct State {
        var values: [UInt32: Int]
        var writes: [(key: String, value: Int)] = []
        var stall: Set<String> = []
        var drift = 0
        var open = 0
        /// STREAMON answers this errno (ENOSPC: a USB 2 bus without bandwidth left).
        var streamOnError: Int32?
        /// Buffers: asked for at the last STREAMON, lent out now, the most ever out at once,
        /// and exposures lost because every buffer was out.
        var buffers = 0, lent = 0, mostLent = 0, starved = 0
        /// The sensor delivers nothing (a camera whose stream stalls: a USB bandwidth fault,
        /// a cable half out); each DQBUF poll then times out, and is counted.
        var dark = false, darkPolls = 0
    }
    private let state: Locked<State>

    public init(_ model: Model) {
        self.model = model
        state = Locked(State(values: Dictionary(model.controls.map { ($0.id, $0.defaultValue) }) { a, _ in a }))
    }

    public func open(_ path: String) throws(CameraError) -> any V4L2Port {
        state.withLock { $0.open += 1 }
        return FakePort(camera: self, path: path)
    }

    // MARK: - What tests look at

    /// Every accepted S_CTRL, in order, by v4l2-ctl key.
    public var writes: [(key: String, value: Int)] { state.withLock { $0.writes } }
    public func clearWrites() { state.withLock { $0.writes = [] } }
    public func value(_ key: String) -> Int? {
        guard let c = control(key) else { return nil }
        return state.withLock { $0.values[c.id] }
    }
    /// The camera stalls this control (uvcvideo answers EILSEQ), as a camera in the wrong state does.
    public func stall(_ key: String) { state.withLock { $0.stall.insert(key) } }
    /// Another program writes a control (v4l2-ctl -c).
    public func setFromOutside(_ key: String, _ v: Int) { let c = control(key)!; state.withLock { $0.values[c.id] = v } }
    public var openHandles: Int { state.withLock { $0.open } }
    /// From now on STREAMON fails with `errno` (nil: it works again), as uvcvideo answers
    /// ENOSPC when the host controller cannot reserve the bandwidth the format needs.
    public func failStreamOn(_ errno: Int32?) { state.withLock { $0.streamOnError = errno } }
    var streamOnError: Int32? { state.withLock { $0.streamOnError } }

    func control(_ key: String) -> DeviceControl? { model.controls.first { $0.key == key } }

    // MARK: - The device's rules

    func get(_ id: UInt32) throws(CameraError) -> Int {
        guard let v = state.withLock({ $0.values[id] }) else { throw .system(call: "VIDIOC_G_CTRL", errno: EINVAL) }
        return v
    }

    func set(_ id: UInt32, _ value: Int) throws(CameraError) {
        guard let c = model.controls.first(where: { $0.id == id }) else { throw .system(call: "VIDIOC_S_CTRL", errno: EINVAL) }
        try state.withLock { s throws(CameraError) in
            for lock in model.locks where lock.value == id && s.values[lock.mode] != lock.manualWhen {
                throw .system(call: "VIDIOC_S_CTRL", errno: EACCES)
            }
            if s.stall.contains(c.key) { throw .system(call: "VIDIOC_S_CTRL", errno: EILSEQ) }
            var v = value
            if c.kind == .menu || c.kind == .integerMenu {
                guard c.menu[v] != nil else { throw .system(call: "VIDIOC_S_CTRL", errno: EINVAL) }
            } else if c.kind != .button {
                // uvcvideo: clamp, then round to the nearest step.
                v = min(max(v, c.minimum), c.maximum)
                if c.step > 1 { v = c.minimum + Int((Double(v - c.minimum) / Double(c.step)).rounded()) * c.step }
                v = min(v, c.maximum)
            }
            s.writes.append((c.key, v))
            if c.kind != .button { s.values[id] = v }
        }
    }

    /// Buffers asked for at the last STREAMON (REQBUFS).
    public var buffers: Int { state.withLock { $0.buffers } }
    /// The most buffers lent out at once, and exposures lost for want of a queued buffer.
    public var mostLent: Int { state.withLock { $0.mostLent } }
    public var starved: Int { state.withLock { $0.starved } }
    /// Stops (or resumes) delivering frames; the stream stays on.
    public func setDark(_ dark: Bool) { state.withLock { $0.dark = dark } }
    /// DQBUF polls that timed out while dark.
    public var darkPolls: Int { state.withLock { $0.darkPolls } }
    /// True (and counted) when the sensor is dark.
    func pollDark() -> Bool { state.withLock { s in if s.dark { s.darkPolls += 1 }; return s.dark } }
    func buffersRequested(_ n: Int) { state.withLock { $0.buffers = n } }
    func lent(_ delta: Int) {
        state.withLock { s in
            s.lent += delta
            s.mostLent = max(s.mostLent, s.lent)
        }
    }
    func frameStarved() { state.withLock { $0.starved += 1 } }

    func streamOn() {
        guard model.resetAtStreamOn else { return }
        state.withLock { s in for c in model.controls { s.values[c.id] = c.defaultValue } }
    }

    /// Automatic exposure moves the exposure time on its own (a volatile value).
    func frameExposed() {
        state.withLock { s in
            let auto = cid(V4L2_CID_EXPOSURE_AUTO), abs = cid(V4L2_CID_EXPOSURE_ABSOLUTE)
            if let mode = s.values[auto], mode != 1, s.values[abs] != nil {
                s.drift += 1
                s.values[abs] = 200 + (s.drift % 50)
            }
        }
    }

    var zoomFactor: Double {
        let z = model.controls.first { $0.id == cid(V4L2_CID_ZOOM_ABSOLUTE) }
        guard let z else { return 1 }
        return Double(state.withLock { $0.values[z.id] } ?? z.minimum) / Double(z.minimum)
    }

    // MARK: - Models

    public static func c920() -> FakeWebcam {
        func c(_ id: Int32, _ name: String, _ kind: DeviceControl.Kind, _ min: Int, _ max: Int, step: Int = 1, _ def: Int,
               menu: [Int: String] = [:]) -> DeviceControl {
            DeviceControl(id: cid(id), name: name, kind: kind, minimum: min, maximum: max, step: step, defaultValue: def, menu: menu)
        }
        let controls = [
            c(V4L2_CID_BRIGHTNESS, "Brightness", .integer, 0, 255, 128),
            c(V4L2_CID_GAIN, "Gain", .integer, 0, 255, 0),
            c(V4L2_CID_AUTO_WHITE_BALANCE, "White Balance, Automatic", .boolean, 0, 1, 1),
            c(V4L2_CID_WHITE_BALANCE_TEMPERATURE, "White Balance Temperature", .integer, 2000, 6500, 4000),
            c(V4L2_CID_EXPOSURE_AUTO, "Auto Exposure", .menu, 0, 3, 3, menu: [1: "Manual Mode", 3: "Aperture Priority Mode"]),
            c(V4L2_CID_EXPOSURE_ABSOLUTE, "Exposure Time, Absolute", .integer, 3, 2047, 250),
            c(V4L2_CID_FOCUS_AUTO, "Focus, Automatic Continuous", .boolean, 0, 1, 1),
            c(V4L2_CID_FOCUS_ABSOLUTE, "Focus, Absolute", .integer, 0, 255, step: 5, 0),
            c(V4L2_CID_ZOOM_ABSOLUTE, "Zoom, Absolute", .integer, 100, 500, 100),
        ]
        return FakeWebcam(Model(controls: controls, locks: [
            (cid(V4L2_CID_FOCUS_ABSOLUTE), cid(V4L2_CID_FOCUS_AUTO), 0),
            (cid(V4L2_CID_EXPOSURE_ABSOLUTE), cid(V4L2_CID_EXPOSURE_AUTO), 1),
            (cid(V4L2_CID_WHITE_BALANCE_TEMPERATURE), cid(V4L2_CID_AUTO_WHITE_BALANCE), 0),
        ], resetAtStreamOn: true, formats: [(640, 480), (1280, 720)]))
    }

    /// A camera module on a sensor driver: exposure in lines, analogue gain, a flash LED.
    public static func piCamera() -> FakeWebcam {
        let controls = [
            DeviceControl(id: cid(V4L2_CID_EXPOSURE), name: "Exposure", kind: .integer, minimum: 4, maximum: 3000, defaultValue: 1000),
            DeviceControl(id: cid(V4L2_CID_ANALOGUE_GAIN), name: "Analogue Gain", kind: .integer, minimum: 16, maximum: 256, defaultValue: 16),
            DeviceControl(id: cid(V4L2_CID_FLASH_LED_MODE), name: "LED Mode", kind: .menu, minimum: 0, maximum: 2, defaultValue: 0,
                          menu: [0: "Off", 1: "Flash", 2: "Torch"]),
            DeviceControl(id: cid(V4L2_CID_FLASH_TORCH_INTENSITY), name: "Torch Intensity", kind: .integer, minimum: 0, maximum: 100, defaultValue: 0),
        ]
        return FakeWebcam(Model(controls: controls, locks: [], resetAtStreamOn: false, formats: [(640, 480)]))
    }

    /// A phone-style camera module with a one-shot autofocus (AUTO_FOCUS_START, as Samsung's
    /// s5c73m3 and m5mols drivers have), continuous AF, a lens, exposure in lines and a torch.
    public static func autofocusModule() -> FakeWebcam {
        let controls = [
            DeviceControl(id: cid(V4L2_CID_FOCUS_AUTO), name: "Focus, Automatic Continuous", kind: .boolean, minimum: 0, maximum: 1, defaultValue: 0),
            DeviceControl(id: cid(V4L2_CID_AUTO_FOCUS_START), name: "Auto Focus, Start", kind: .button, minimum: 0, maximum: 0, defaultValue: 0),
            DeviceControl(id: cid(V4L2_CID_FOCUS_ABSOLUTE), name: "Focus, Absolute", kind: .integer, minimum: 0, maximum: 1023, defaultValue: 0),
            DeviceControl(id: cid(V4L2_CID_EXPOSURE), name: "Exposure", kind: .integer, minimum: 4, maximum: 3000, defaultValue: 1000),
            DeviceControl(id: cid(V4L2_CID_ANALOGUE_GAIN), name: "Analogue Gain", kind: .integer, minimum: 16, maximum: 256, defaultValue: 16),
            DeviceControl(id: cid(V4L2_CID_FLASH_LED_MODE), name: "LED Mode", kind: .menu, minimum: 0, maximum: 2, defaultValue: 0,
                          menu: [0: "Off", 1: "Flash", 2: "Torch"]),
            DeviceControl(id: cid(V4L2_CID_FLASH_TORCH_INTENSITY), name: "Torch Intensity", kind: .integer, minimum: 0, maximum: 100, defaultValue: 0),
        ]
        return FakeWebcam(Model(controls: controls, locks: [(cid(V4L2_CID_FOCUS_ABSOLUTE), cid(V4L2_CID_FOCUS_AUTO), 0)],
                                resetAtStreamOn: false, formats: [(640, 480)]))
    }

    /// vivid's shape (and ov5640's): automatic gain and gain, no exposure controls.
    public static func gainOnly() -> FakeWebcam {
        let controls = [
            DeviceControl(id: cid(V4L2_CID_AUTOGAIN), name: "Gain, Automatic", kind: .boolean, minimum: 0, maximum: 1, defaultValue: 1),
            DeviceControl(id: cid(V4L2_CID_GAIN), name: "Gain", kind: .integer, minimum: 0, maximum: 255, defaultValue: 100),
        ]
        return FakeWebcam(Model(controls: controls, locks: [(cid(V4L2_CID_GAIN), cid(V4L2_CID_AUTOGAIN), 0)],
                                resetAtStreamOn: false, formats: [(640, 480)]))
    }
}

/// One open handle on a FakeWebcam. Its frames are YUYV vertical bars, `barWidth` pixels
/// wide at zoom_absolute's minimum, widened by the optical zoom around the centre.
/// Its buffers behave like a driver's: REQBUFS's count of them, each either queued (the
/// sensor may fill it) or lent out with a frame until its lease ends; with none queued the
/// sensor has nowhere to write, and the frame is lost (counted in `FakeWebcam.starved`).
final class FakePort: V4L2Port, @unchecked Sendable {  // one owner at a time, like a real fd
    static let barWidth = 6
    let camera: FakeWebcam
    let path: String
    private(set) var bytesPerLine = 0
    private var format: VideoFormat?
    private var streaming = false
    private var buffers: [UnsafeMutableRawBufferPointer] = []
    private var queued: [Int] = []
    /// Buffers whose lease ended, to queue again (a lease may end on any thread).
    private let returned = Locked<[Int]>([])
    private var sequence: UInt64 = 0

    init(camera: FakeWebcam, path: String) { self.camera = camera; self.path = path }

    func controls() -> [DeviceControl] { camera.model.controls }
    func get(_ id: UInt32) throws(CameraError) -> Int { try camera.get(id) }
    func set(_ id: UInt32, _ value: Int) throws(CameraError) { try camera.set(id, value) }

    func setFormat(_ want: VideoFormat) throws(CameraError) -> VideoFormat {
        let size = camera.model.formats.min { abs($0.0 - want.width) < abs($1.0 - want.width) }!
        let f = VideoFormat(pixelFormat: .yuyv, width: size.0, height: size.1, fps: 30)
        format = f
        bytesPerLine = f.width * 2
        return f
    }

    func startStreaming(bufferCount: Int) throws(CameraError) {
        guard let f = format else { throw .system(call: "VIDIOC_STREAMON", errno: EINVAL) }
        if let e = camera.streamOnError { throw .system(call: "VIDIOC_STREAMON", errno: e) }
        freeBuffers()
        buffers = (0..<max(2, bufferCount)).map { _ in
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: f.width * f.height * 2, alignment: 64)
            b.initializeMemory(as: UInt8.self, repeating: 128)
            return b
        }
        queued = Array(buffers.indices)
        camera.buffersRequested(buffers.count)
        streaming = true
        camera.streamOn()
    }

    func withNextFrame(timeoutMs: Int32, _ body: (UnsafeRawBufferPointer, UInt64, Double, FrameLease?) -> Void) throws(CameraError) -> Bool {
        guard streaming, let f = format else { throw .system(call: "VIDIOC_DQBUF", errno: EINVAL) }
        queued += returned.withLock { r in defer { r = [] }; return r }
        usleep(UInt32(min(Int(timeoutMs), 33) * 1000))  // the sensor's frame interval
        if camera.pollDark() { return false }  // the poll timed out
        guard !queued.isEmpty else {  // every buffer is lent out: this exposure has nowhere to go
            camera.frameStarved()
            return false
        }
        let index = queued.removeFirst()
        // Exposed now, with the lens where it is now: the timestamp comes before the zoom is
        // read, so a frame stamped after a zoom call always shows it.
        let exposed = Clock.now()
        camera.frameExposed()
        render(f, zoom: camera.zoomFactor, into: buffers[index])
        sequence += 1
        do {
            let returned = self.returned, camera = self.camera
            camera.lent(+1)
            let lease = FrameLease { returned.withLock { $0.append(index) }; camera.lent(-1) }
            body(UnsafeRawBufferPointer(buffers[index]), sequence, exposed, lease)
        }
        queued += returned.withLock { r in defer { r = [] }; return r }
        return true
    }

    private func freeBuffers() {
        for b in buffers { b.deallocate() }
        buffers = []
        queued = []
    }

    deinit { freeBuffers() }

    private func render(_ f: VideoFormat, zoom: Double, into frame: UnsafeMutableRawBufferPointer) {
        let cx = Double(f.width) / 2
        var row = [UInt8](repeating: 0, count: f.width)
        for x in 0..<f.width {
            let sx = cx + (Double(x) + 0.5 - cx) / zoom
            row[x] = Int((sx / Double(Self.barWidth)).rounded(.down)) % 2 == 0 ? 235 : 16
        }
        do {
            let p = frame.bindMemory(to: UInt8.self)
            for y in 0..<f.height {
                let base = y * f.width * 2
                for x in 0..<f.width { p[base + 2 * x] = row[x]; p[base + 2 * x + 1] = 128 }
            }
        }
    }

    func close() { streaming = false }
}
