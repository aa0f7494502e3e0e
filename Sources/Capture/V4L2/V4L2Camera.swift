// A V4L2 camera behind the same CaptureDevice seam as the synthetic one. `start` opens the
// node, sets format and rate, maps buffers and starts a capture thread that polls with a
// timeout; `stop` ends the thread and closes everything in reverse.

import CameraCore
import Foundation

public final class V4L2Camera: CaptureDevice, @unchecked Sendable {
    public let descriptor: CameraDescriptor
    public let path: String
    private let lock = NSLock()
    private var cachedFormats: [FormatOption]
    private var worker: CaptureWorker?
    private var interrupted: (@Sendable (CameraError) -> Void)?
    private let mapping: V4L2ControlMapping
    /// A torch outside V4L2 (an LED class device named in config), if any.
    public let torchLED: LEDTorch?
    private var settings: DeviceSettings?
    /// A second handle for controls while the capture thread owns the streaming one;
    /// opened with the stream and closed with it (vivid only reconnects once every handle
    /// is closed, as a real unplugged device does).
    private var controlDevice: V4L2Device?
    /// No frame for this long means the device is gone (µStreamer's --device-timeout).
    public var captureTimeout: Double = 3

    public init(id: String, path: String, name: String? = nil, position: CameraDescriptor.Position = .external,
                formats: [FormatOption]? = nil, torchLED: LEDTorch? = nil) {
        self.path = path
        self.torchLED = torchLED
        let node = formats == nil ? (try? V4L2Discovery.describe(path)) ?? nil : nil
        descriptor = CameraDescriptor(id: id, name: name ?? node?.name ?? path, position: position, kind: .v4l2, device: path)
        cachedFormats = formats ?? node?.formats ?? []
        let probe = try? V4L2Device(path: path)
        mapping = V4L2ControlMapping(probe.map { FileControlIO(fd: $0.fd).controls() } ?? [])
        probe?.close()
    }

    public var formats: [FormatOption] { lock.withLock { cachedFormats } }

    public func setInterruptionHandler(_ handler: @escaping @Sendable (CameraError) -> Void) {
        lock.withLock { interrupted = handler }
    }

    /// What the device's controls allow (digital zoom where it has no ZOOM_ABSOLUTE).
    public var capabilities: Capabilities {
        var caps = mapping.capabilities
        if torchLED?.available == true { caps.torch = true }
        return caps
    }

    public func apply(_ settings: DeviceSettings) {
        let io = lock.withLock { () -> V4L2Device? in
            self.settings = settings
            return controlDevice
        }
        if let io { writeSettings(settings, through: io) }
        if let torchLED, torchLED.available {
            try? torchLED.set(level: settings.torch.mode == "on" ? settings.torch.level : 0)
        }
    }

    private func writeSettings(_ s: DeviceSettings, through device: V4L2Device) {
        for e in mapping.apply(s, to: FileControlIO(fd: device.fd)) { _ = e }  // a refused control leaves the rest applied
    }

    public func controls() throws(CameraError) -> [DeviceControl] {
        try withControls { io in
            io.controls().map { c in
                var c = c
                if c.kind != .button { c.value = try? io.get(c.id) }
                return c
            }
        }
    }

    public func setControls(_ values: [String: Int]) throws(CameraError) {
        try withControls { io throws(CameraError) in
            let all = io.controls()
            let byKey = Dictionary(all.map { ($0.key, $0) }) { a, _ in a }
            for key in values.keys.sorted() where byKey[key] == nil || byKey[key]!.readOnly {
                throw .unsupportedControl(key, known: all.filter { !$0.readOnly }.map(\.key).sorted())
            }
            for (key, value) in values.sorted(by: { $0.key < $1.key }) {
                let c = byKey[key]!
                try io.set(c.id, c.clamp(value))
            }
        }
    }

    /// Runs `body` with the running stream's control handle, or a short-lived one.
    private func withControls<T>(_ body: (FileControlIO) throws(CameraError) -> T) throws(CameraError) -> T {
        if let d = lock.withLock({ controlDevice }) { return try body(FileControlIO(fd: d.fd)) }
        let d = try V4L2Device(path: path)
        defer { d.close() }
        return try body(FileControlIO(fd: d.fd))
    }

    public func start(format: VideoFormat, handler: @escaping FrameHandler) throws(CameraError) {
        stop()
        let device = try V4L2Device(path: path)
        do throws(CameraError) {
            let applied = try device.setFormat(format)
            guard applied.width == format.width, applied.height == format.height,
                  applied.pixelFormat == format.pixelFormat else {
                throw .unsupportedFormat("\(path) gave \(applied.width)x\(applied.height) \(applied.pixelFormat.rawValue) for \(format.width)x\(format.height) \(format.pixelFormat.rawValue)")
            }
            try device.startStreaming()
        } catch {
            device.close()
            throw error
        }
        // Settings after stream-on: some cameras (the C920's focus) reset controls there.
        let control = try? V4L2Device(path: path)
        let (current, onLoss) = lock.withLock { () -> (DeviceSettings?, (@Sendable (CameraError) -> Void)?) in
            controlDevice = control
            return (settings, interrupted)
        }
        if let current, let control { writeSettings(current, through: control) }
        let w = CaptureWorker(device: device, format: format, timeout: captureTimeout, handler: handler,
                              interrupted: { [weak self] error in
                                  self?.closeControls()
                                  onLoss?(error)
                              })
        lock.withLock { worker = w }
    }

    public func stop() {
        let w = lock.withLock { () -> CaptureWorker? in defer { worker = nil }; return worker }
        w?.stop()
        closeControls()
    }

    private func closeControls() {
        let d = lock.withLock { () -> V4L2Device? in defer { controlDevice = nil }; return controlDevice }
        d?.close()
    }
}

/// The capture thread of one V4L2 stream. Frames are validated before they leave: raw
/// frames must be whole, MJPEG frames must start and end like a JPEG.
final class CaptureWorker: @unchecked Sendable {
    private let lock = NSLock()
    private var running = true
    private let done = DispatchSemaphore(value: 0)
    private(set) var lastError: CameraError?

    init(device: V4L2Device, format: VideoFormat, timeout: Double, handler: @escaping FrameHandler,
         interrupted: (@Sendable (CameraError) -> Void)?) {
        let box = DeviceBox(device)
        let thread = Thread { [self] in
            let expected = format.pixelFormat.frameBytes(width: format.width, height: format.height)
            let stride = box.device.bytesPerLine > 0 ? box.device.bytesPerLine : format.pixelFormat.bytesPerLine(width: format.width) ?? 0
            var lastFrame = Clock.monotonic()
            var failure: CameraError?
            while isRunning {
                do throws(CameraError) {
                    let got = try box.device.withNextFrame(timeoutMs: 200) { bytes, sequence, timestamp in
                        if let expected, bytes.count < expected { return }
                        if format.pixelFormat == .mjpeg && !Self.looksLikeJPEG(bytes) { return }
                        handler(RawFrame(format: format, bytes: bytes, stride: stride, sequence: sequence, timestamp: timestamp))
                    }
                    if got { lastFrame = Clock.monotonic() } else if Clock.monotonic() - lastFrame > timeout {
                        throw CameraError.unavailable("\(box.device.path): no frame in \(timeout) s")
                    }
                } catch {
                    failure = error
                    break
                }
            }
            box.device.close()
            let wasRunning = lock.withLock { () -> Bool in lastError = failure; return running }
            if let failure, wasRunning { interrupted?(failure) }
            done.signal()
        }
        thread.name = "v4l2-\(device.path)"
        thread.start()
    }

    private var isRunning: Bool { lock.withLock { running } }

    func stop() {
        let was = lock.withLock { () -> Bool in defer { running = false }; return running }
        if was { done.wait() }
    }

    static func looksLikeJPEG(_ b: UnsafeRawBufferPointer) -> Bool {
        guard b.count > 4, b[0] == 0xFF, b[1] == 0xD8 else { return false }
        // Some cameras pad after EOI: look for it near the end.
        let tail = b.count - min(b.count - 2, 64)
        for i in stride(from: b.count - 2, through: tail, by: -1) where b[i] == 0xFF && b[i + 1] == 0xD9 { return true }
        return false
    }
}

/// Hands the device to its capture thread, which alone uses it from then on.
final class DeviceBox: @unchecked Sendable {
    let device: V4L2Device
    init(_ device: V4L2Device) { self.device = device }
}
