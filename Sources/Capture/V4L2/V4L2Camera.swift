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
    /// No frame for this long means the device is gone (µStreamer's --device-timeout).
    public var captureTimeout: Double = 3

    public init(id: String, path: String, name: String? = nil, position: CameraDescriptor.Position = .external,
                formats: [FormatOption]? = nil) {
        self.path = path
        let node = formats == nil ? (try? V4L2Discovery.describe(path)) ?? nil : nil
        descriptor = CameraDescriptor(id: id, name: name ?? node?.name ?? path, position: position, kind: .v4l2, device: path)
        cachedFormats = formats ?? node?.formats ?? []
    }

    public var formats: [FormatOption] { lock.withLock { cachedFormats } }

    public func setInterruptionHandler(_ handler: @escaping @Sendable (CameraError) -> Void) {
        lock.withLock { interrupted = handler }
    }

    /// Controls arrive with the control mapping; until then only digital zoom.
    public var capabilities: Capabilities { .fixed }

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
        let w = CaptureWorker(device: device, format: format, timeout: captureTimeout, handler: handler,
                              interrupted: lock.withLock { interrupted })
        lock.withLock { worker = w }
    }

    public func stop() {
        let w = lock.withLock { () -> CaptureWorker? in defer { worker = nil }; return worker }
        w?.stop()
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
            let stride = box.device.bytesPerLine > 0 ? box.device.bytesPerLine : format.width * 2
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
