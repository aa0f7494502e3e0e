// A V4L2 camera behind the same CaptureDevice seam as the synthetic one. `start` opens the
// node, sets format and rate, maps buffers, streams, then writes the session's settings
// (cameras reset controls at STREAMON, and a replugged one is at its defaults) through a
// second handle that stays open for control calls; `stop` ends the capture thread and
// closes everything in reverse.

import CameraCore
import Foundation
import SystemSupport

public final class V4L2Camera: CaptureDevice, Sendable {
    public let descriptor: CameraDescriptor
    /// A torch outside V4L2 (an LED class device named in config), if any.
    public let torchLED: LEDTorch?
    /// No frame for this long means the device is gone (µStreamer's --device-timeout), on
    /// `timekeeper`'s clock (the system's, or a test's).
    public let captureTimeout: Double
    private let timekeeper: any Timekeeper
    private let open: V4L2Opener
    /// Where the camera is now: a replugged camera may come back under another node.
    private let locate: (@Sendable () -> String?)?
    private let mapping: V4L2ControlMapping
    private let state: Locked<State>
    /// Frames the running stream dequeued but did not deliver (see `rejectedFrames`).
    private let rejected = Locked<UInt64>(0)

    private struct State {
        var path: String
        var formats: [FormatOption]
        var loop: SteppingThread?
        /// The control handle, open while streaming (vivid only reconnects once every
        /// handle is closed, as a real unplugged device does).
        var control: (any V4L2Port)?
        var interrupted: (@Sendable (CameraError) -> Void)?
        /// What the device was last told and read back: written in full after stream-on.
        var settings: DeviceSettings?
        /// Writes refused while restoring `settings` after stream-on, for the session to report.
        var restoreRefusals: [CameraError] = []
        var mapping: V4L2ControlMapping
    }

    public init(id: String, path: String, name: String? = nil, position: CameraDescriptor.Position = .external,
                formats: [FormatOption]? = nil, torchLED: LEDTorch? = nil, captureTimeout: Double = 3,
                timekeeper: any Timekeeper = SystemTimekeeper(),
                lending: Int = ProcessInfo.processInfo.activeProcessorCount + 1,
                locate: (@Sendable () -> String?)? = nil,
                open: @escaping V4L2Opener = { path throws(CameraError) in try V4L2Device(path: path) }) {
        self.torchLED = torchLED
        self.open = open
        self.locate = locate
        self.captureTimeout = captureTimeout
        self.timekeeper = timekeeper
        self.lending = max(1, lending)
        let node = formats == nil ? (try? V4L2Discovery.describe(path)) ?? nil : nil
        descriptor = CameraDescriptor(id: id, name: name ?? node?.name ?? path, position: position, kind: .v4l2, device: path)
        let probe = try? open(path)
        mapping = V4L2ControlMapping(probe?.controls() ?? [])
        probe?.close()
        state = Locked(State(path: path, formats: formats ?? node?.formats ?? [], mapping: mapping))
    }

    public var formats: [FormatOption] { state.withLock { $0.formats } }

    /// Frames the camera lends out at once (its mmap buffers read in place, not copied): by
    /// default one per core and one waiting — what an encode on every core can hold. The
    /// camera's own setting: it asks REQBUFS for these and 3 more for the driver to fill.
    public let lending: Int

    /// The node the camera was last opened at.
    public var path: String { state.withLock { $0.path } }

    /// Frames dequeued since the last start but never handed on: flagged V4L2_BUF_FLAG_ERROR
    /// by the driver, shorter than the format, or (MJPEG) not a whole JPEG.
    public var rejectedFrames: UInt64 { rejected.withLock { $0 } }

    public func takeRestoreRefusals() -> [CameraError] {
        state.withLock { s in defer { s.restoreRefusals = [] }; return s.restoreRefusals }
    }

    public func setInterruptionHandler(_ handler: @escaping @Sendable (CameraError) -> Void) {
        state.withLock { $0.interrupted = handler }
    }

    /// What the device's controls allow (digital zoom where it has no ZOOM_ABSOLUTE).
    public var capabilities: Capabilities {
        var caps = mapping.capabilities
        if torchLED?.available == true { caps.torch = true }
        return caps
    }

    // MARK: - Settings

    public func apply(_ change: SettingsChange) throws(CameraError) -> DeviceSettings {
        var result = try state.withLock { s throws(CameraError) -> DeviceSettings in
            guard let control = s.control else {
                s.settings = change.new  // written after the next stream-on
                return change.new
            }
            let accepted = try s.mapping.apply(change, to: control)
            s.settings = accepted
            return accepted
        }
        if let torchLED, torchLED.available, change.old?.torch != change.new.torch {
            try torchLED.set(level: change.new.torch.mode == .on ? change.new.torch.level : 0)
            result.torch = change.new.torch
        }
        return result
    }

    public func readBack(_ settings: DeviceSettings) -> DeviceSettings? {
        state.withLock { s -> DeviceSettings? in
            guard let control = s.control else { return nil }
            var read = s.mapping.read(settings, from: control)
            if torchLED != nil { read.torch = settings.torch }
            s.settings = read
            return read
        }
    }

    // MARK: - Raw controls

    public func controls() throws(CameraError) -> [DeviceControl] {
        try withControls { io in
            io.controls().map { c in
                var c = c
                if c.kind != .button { c.value = try? io.get(c.id) }
                return c
            }
        }
    }

    public func setControls(_ values: [String: Int]) throws(CameraError) -> [String: Int] {
        try withControls { io throws(CameraError) -> [String: Int] in
            let all = io.controls()
            let byKey = Dictionary(all.map { ($0.key, $0) }) { a, _ in a }
            for key in values.keys.sorted() where byKey[key] == nil || byKey[key]!.readOnly {
                throw .unsupportedControl(key, known: all.filter { !$0.readOnly }.map(\.key).sorted())
            }
            // One call, all or nothing: a refusal puts back what this call wrote (newest first).
            var undo: [(UInt32, Int)] = []
            for (key, value) in values.sorted(by: { $0.key < $1.key }) {
                let c = byKey[key]!, before = c.kind == .button ? nil : try? io.get(c.id)
                do throws(CameraError) { try io.set(c.id, c.clamp(value)) } catch {
                    for (id, v) in undo.reversed() { try? io.set(id, v) }
                    if case .system(let e) = error { throw .refused(control: key, value: c.clamp(value), errno: e.errno) }
                    throw error
                }
                if let before { undo.append((c.id, before)) }
            }
            var kept: [String: Int] = [:]
            for c in V4L2ControlMapping(all).keptByKey(values.keys) { if let v = try? io.get(c.id) { kept[c.key] = v } }
            return kept
        }
    }

    /// Runs `body` with the running stream's control handle, or a short-lived one.
    private func withControls<T>(_ body: (any V4L2Port) throws(CameraError) -> T) throws(CameraError) -> T {
        try state.withLock { s throws(CameraError) -> T in
            if let control = s.control { return try body(control) }
            let d = try open(s.path)
            defer { d.close() }
            return try body(d)
        }
    }

    // MARK: - Streaming

    public func start(format: VideoFormat, handler: @escaping FrameHandler) throws(CameraError) {
        stop()
        let path = locate?() ?? state.withLock { $0.path }
        let device = try open(path)
        do throws(CameraError) {
            let applied = try device.setFormat(format)
            guard applied.width == format.width, applied.height == format.height,
                  applied.pixelFormat == format.pixelFormat else {
                throw .unsupportedFormat("\(path) gave \(applied.width)x\(applied.height) \(applied.pixelFormat.rawValue) for \(format.width)x\(format.height) \(format.pixelFormat.rawValue)")
            }
            // The frames this camera lends at once come on top of what the driver needs to keep filling.
            try device.startStreaming(bufferCount: V4L2Device.bufferCount(lending: lending))
        } catch {
            device.close()
            throw error
        }
        let control = try? open(path)
        let onLoss = state.withLock { s -> (@Sendable (CameraError) -> Void)? in
            s.path = path
            s.control = control
            s.mapping.lineTime = 1 / (Double(max(format.fps, 1)) * Double(max(format.height, 1)))
            // Settings after stream-on, all of them: cameras reset controls there (the
            // C920's focus), and a replugged camera powered up at its defaults.
            if let control, let settings = s.settings {
                let (read, refused) = s.mapping.restore(settings, to: control)
                s.settings = read
                s.restoreRefusals += refused
            }
            return s.interrupted
        }
        rejected.withLock { $0 = 0 }
        let loop = V4L2Stream.loop(device: device, format: format, timeout: captureTimeout, clock: timekeeper, handler: handler,
                                   rejected: { [weak self] in self?.rejected.withLock { $0 += 1 } }) { [weak self] error in
            self?.closeControls()
            onLoss?(error)
        }
        state.withLock { $0.loop = loop }
    }

    public func stop() {
        let loop = state.withLock { s -> SteppingThread? in defer { s.loop = nil }; return s.loop }
        loop?.stop()
        closeControls()
    }

    private func closeControls() {
        state.withLock { s in
            s.control?.close()
            s.control = nil
        }
    }
}

/// The capture thread of one V4L2 stream. Frames are validated before they leave: raw
/// frames must be whole, MJPEG frames must start and end like a JPEG; `rejected` is told of
/// each frame that is not (or that the driver flagged as an error).
enum V4L2Stream {
    static func loop(device: any V4L2Port, format: VideoFormat, timeout: Double, clock: any Timekeeper = SystemTimekeeper(),
                     handler: @escaping FrameHandler,
                     rejected: @escaping @Sendable () -> Void = {},
                     lost: @escaping @Sendable (CameraError) -> Void) -> SteppingThread {
        let expected = format.pixelFormat.frameBytes(width: format.width, height: format.height)
        let stride = device.bytesPerLine > 0 ? device.bytesPerLine : format.pixelFormat.bytesPerLine(width: format.width) ?? 0
        return DeviceCaptureThread.start(name: "v4l2-\(device.path)", device: device.path, timeout: timeout, clock: clock, step: {
            () throws(CameraError) -> Bool in
            var delivered = false
            let got = try device.withNextFrame(timeoutMs: 200) { bytes, sequence, timestamp, lease in
                if let expected, bytes.count < expected { return }
                if format.pixelFormat == .mjpeg && !looksLikeJPEG(bytes) { return }
                delivered = true
                handler(RawFrame(format: format, bytes: bytes, stride: stride, sequence: sequence, timestamp: timestamp,
                                 lease: lease))
            }
            if got && !delivered { rejected() }
            return got
        }, release: { device.close() }, lost: lost)
    }

    static func looksLikeJPEG(_ b: UnsafeRawBufferPointer) -> Bool {
        guard b.count > 4, b[0] == 0xFF, b[1] == 0xD8 else { return false }
        // Some cameras pad after EOI: look for it near the end.
        let tail = b.count - min(b.count - 2, 64)
        for i in stride(from: b.count - 2, through: tail, by: -1) where b[i] == 0xFF && b[i + 1] == 0xD9 { return true }
        return false
    }
}
