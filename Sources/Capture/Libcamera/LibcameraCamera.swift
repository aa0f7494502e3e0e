// A libcamera camera behind the same CaptureDevice seam as a V4L2 one. `start` acquires it,
// configures its video stream, maps the buffers and starts; its capture thread waits on the
// facade's completion descriptor, lends each completed request's buffer to the outputs (as
// a V4L2 mmap buffer is lent) and queues it again once they let go. libcamera may adjust a
// configuration: a size it gave instead of the one asked is refused by name, never used
// silently. `stop` stops, waits for the lent buffers and releases the camera.
//
// Settings go to the camera as libcamera's controls (LibcameraControlMapping), on the requests
// queued next, and are read back from the first completed request that carries them. Those
// made while it is not running, the picture adjustments among them (the settings' `controls`),
// are kept and given again with the start's controls: a camera reopened after an unplug
// starts with them. The zoom, where the camera has ScalerCrop, is the sensor's crop, set by
// the capture thread per request from the session's transform (ScalerCrop.swift).

import CLibcamera
import CameraCore
import Foundation
import SystemSupport

public final class LibcameraCamera: CaptureDevice, Sendable {
    public let descriptor: CameraDescriptor
    public let formats: [FormatOption]
    /// No frame for this long means the camera is gone.
    public let captureTimeout: Double
    /// Frames lent at once (see V4L2Camera's `lending`).
    public let lending = ProcessInfo.processInfo.activeProcessorCount + 1
    private let manager: LibcameraManager
    private let pixelArray: (width: Int, height: Int)?
    private let state: Locked<State>
    private let rejected = Locked<UInt64>(0)

    private struct State {
        /// The camera's controls: its ControlInfoMap as enumerated, then as configured (libcamera
        /// sets the ranges of ExposureTime, FrameDurationLimits and ScalerCrop in configure()).
        var mapping: LibcameraControlMapping
        var loop: SteppingThread?
        var interrupted: (@Sendable (CameraError) -> Void)?
        /// The running camera, for its controls.
        var camera: LibcameraHandle?
        /// How long a setting may take to reach a completed request: a few frames.
        var applyTimeout = 1.0
        /// What the camera was last told and read back: given again at every start.
        var settings: DeviceSettings?
        /// Settings refused when given again at a start, for the session to report.
        var restoreRefusals: [CameraError] = []
        /// The session's transform, for the zoom the camera crops itself (ScalerCrop).
        var cropSource: (@Sendable () -> FrameTransform)?
    }

    public init(id: String, camera: String, manager: LibcameraManager, position: CameraDescriptor.Position? = nil,
                captureTimeout: Double = 3) {
        self.manager = manager
        self.captureTimeout = captureTimeout
        let info = manager.cameras().first { $0.id == camera }
        descriptor = CameraDescriptor(id: id, name: info?.model ?? camera, position: position ?? info?.position ?? .external,
                                      kind: .libcamera, device: camera)
        formats = (try? manager.formats(of: camera)) ?? []
        pixelArray = info?.pixelArray
        state = Locked(State(mapping: LibcameraControlMapping(manager.controls(of: camera), pixelArray: info?.pixelArray)))
    }

    private var mapping: LibcameraControlMapping { state.withLock { $0.mapping } }

    /// A camera id from libcamera's: lower case, runs of anything but letters, digits, '.' and
    /// '_' as one '-' ("platform/vimc.0 Sensor B" → "platform-vimc.0-sensor-b").
    public static func identifier(_ libcameraID: String) -> String {
        var out = ""
        for ch in libcameraID.lowercased() {
            if ch.isLetter && ch.isASCII || ch.isNumber && ch.isASCII || ch == "." || ch == "_" { out.append(ch) }
            else if !out.isEmpty && out.last != "-" { out.append("-") }
        }
        while out.last == "-" { out.removeLast() }
        return out.isEmpty ? "libcamera" : out
    }

    /// What the camera's ControlInfoMap has, in AVFoundation's terms (the zoom crops the sensor
    /// where it has ScalerCrop, the delivered frame otherwise).
    public var capabilities: Capabilities { mapping.capabilities }

    public func apply(_ change: SettingsChange) throws(CameraError) -> DeviceSettings {
        let (camera, timeout, mapping) = state.withLock { ($0.camera, $0.applyTimeout, $0.mapping) }
        guard let camera else {
            state.withLock { $0.settings = change.new }  // given with the next start's controls
            return change.new
        }
        let read = try mapping.apply(change, to: camera, timeout: timeout)
        state.withLock { $0.settings = read }
        return read
    }

    public func readBack(_ settings: DeviceSettings) -> DeviceSettings? {
        guard let camera = state.withLock({ $0.camera }) else { return nil }
        let read = mapping.read(settings, from: camera)
        state.withLock { $0.settings = read }
        return read
    }

    public func takeRestoreRefusals() -> [CameraError] {
        state.withLock { s in defer { s.restoreRefusals = [] }; return s.restoreRefusals }
    }

    /// The picture adjustments (Brightness, Contrast, Saturation, Sharpness) in thousandths:
    /// what the camera reports, else what was set, else its default.
    public func controls() throws(CameraError) -> [DeviceControl] {
        let (camera, set) = state.withLock { ($0.camera, $0.settings?.controls ?? [:]) }
        return mapping.adjustmentControls { c in
            camera?.get(c.name)?.values.first ?? set[DeviceControl.key(of: c.name)].map { Double($0) / 1000 }
        }
    }

    /// Answers every value set, clamped: each adjustment is kept by key (no setting stands for one).
    public func setControls(_ values: [String: Int]) throws(CameraError) -> [String: Int] {
        let all = try controls()
        let byKey = Dictionary(all.map { ($0.key, $0) }) { a, _ in a }
        for key in values.keys.sorted() where byKey[key] == nil {
            throw .unsupportedControl(key, known: all.map(\.key).sorted())
        }
        let (camera, timeout) = state.withLock { ($0.camera, $0.applyTimeout) }
        var generation: Int64 = 0
        var kept: [String: Int] = [:]
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            let c = byKey[key]!
            if let camera { generation = try camera.set(c.name, [Double(c.clamp(value)) / 1000]) }
            kept[key] = c.clamp(value)
        }
        // Held for the next start (a stopped camera has only these), and the answer to `controls()`.
        state.withLock { s in
            var held = s.settings ?? DeviceSettings()
            held.controls.merge(kept) { _, set in set }
            s.settings = held
        }
        // Answered once a frame has them, so what is read next is what the camera did.
        if let camera, generation > 0 { _ = camera.waitApplied(generation, timeout: timeout) }
        return kept
    }

    /// Completed requests that came back failed or cancelled while running: dropped frames.
    public var rejectedFrames: UInt64 { rejected.withLock { $0 } }

    public func setInterruptionHandler(_ handler: @escaping @Sendable (CameraError) -> Void) {
        state.withLock { $0.interrupted = handler }
    }

    public func setCropSource(_ source: @escaping @Sendable () -> FrameTransform) {
        state.withLock { $0.cropSource = source }
    }

    public func start(format: VideoFormat, handler: @escaping FrameHandler) throws(CameraError) {
        stop()
        let id = descriptor.device ?? descriptor.id
        guard let fourcc = LibcameraManager.fourcc(format.pixelFormat) else {
            throw .unsupportedFormat("libcamera camera \(id) has no \(format.pixelFormat.rawValue)")
        }
        let camera = try LibcameraHandle(manager: manager, id: id)
        var stream = lc_stream()
        // The frames it lends at once come on top of what the pipeline needs to keep filling (as V4L2's).
        var r = lc_camera_configure(camera.pointer, fourcc, UInt32(format.width), UInt32(format.height),
                                    UInt32(V4L2Device.bufferCount(lending: lending)), &stream)
        guard r == 0 else { throw .system(call: "libcamera configure(\(id), \(format.width)x\(format.height) \(format.pixelFormat.rawValue))", errno: -r) }
        guard stream.adjusted == 0 else {
            let got = LibcameraManager.pixelFormat(fourcc: stream.fourcc)?.rawValue ?? "0x" + String(stream.fourcc, radix: 16)
            throw .unsupportedFormat("libcamera camera \(id) gave \(stream.width)x\(stream.height) \(got) for \(format.width)x\(format.height) \(format.pixelFormat.rawValue)")
        }
        let mapping = LibcameraControlMapping(manager.controls(of: id), pixelArray: pixelArray)
        // What was set before (or on the camera's last run) goes with the start's controls: the
        // first frame already has it.
        let settings = state.withLock { $0.settings }
        var refused: [CameraError] = []
        if let rate = mapping.frameDuration(fps: format.fps) {
            do throws(CameraError) { _ = try camera.set(rate.name, rate.values) } catch { refused.append(error) }
        }
        if let settings {
            for w in mapping.writes(for: SettingsChange(old: nil, new: settings)) {
                do throws(CameraError) { _ = try camera.set(w.name, w.values) } catch { refused.append(error) }
            }
        }
        // The zoom as the sensor's crop, where the camera has ScalerCrop (its maximum is the
        // configured mode's): the start's requests carry the crop of now, each later one the
        // crop of when it is queued.
        var crops: ScalerCropRequests?
        if let source = state.withLock({ $0.cropSource }),
           let geometry = ScalerCrop(maximum: mapping.has(LibcameraControlMapping.scalerCrop)?.rectangleMax, width: format.width, height: format.height) {
            crops = ScalerCropRequests(geometry: geometry, source: source)
            for index in 0..<Int(stream.buffers) { crops?.prepare(index, on: camera) }
        }
        r = lc_camera_start(camera.pointer)
        guard r == 0 else { throw .system(call: "libcamera start(\(id))", errno: -r) }
        rejected.withLock { $0 = 0 }
        let onLoss = state.withLock { s -> (@Sendable (CameraError) -> Void)? in
            s.camera = camera
            s.mapping = mapping
            // A setting rides on the next request queued, behind every one queued already.
            s.applyTimeout = min(3, (Double(stream.buffers) + 3) / Double(max(format.fps, 1)) + 0.2)
            s.restoreRefusals += refused
            return s.interrupted
        }
        let loop = LibcameraStream.loop(camera: camera, id: id, format: format, stride: Int(stream.stride),
                                        frameSize: Int(stream.frame_size), crops: crops, timeout: captureTimeout,
                                        handler: handler, rejected: { [weak self] in self?.rejected.withLock { $0 += 1 } },
                                        lost: { [weak self] error in
                                            self?.state.withLock { $0.camera = nil }
                                            onLoss?(error)
                                        })
        state.withLock { $0.loop = loop }
    }

    public func stop() {
        let loop = state.withLock { s -> SteppingThread? in
            defer { s.loop = nil; s.camera = nil }
            return s.loop
        }
        loop?.stop()
    }
}

/// The capture thread of one libcamera stream.
enum LibcameraStream {
    static func loop(camera: LibcameraHandle, id: String, format: VideoFormat, stride: Int, frameSize: Int, crops: ScalerCropRequests?, timeout: Double,
                     clock: any Timekeeper = SystemTimekeeper(), handler: @escaping FrameHandler, rejected: @escaping @Sendable () -> Void,
                     lost: @escaping @Sendable (CameraError) -> Void) -> SteppingThread {
        // A whole frame is libcamera's frame size (its rows padded to the stride, as a Pi's ISP
        // pads them), not the format's packed size; an MJPEG frame is however long it is.
        let expected = format.pixelFormat == .mjpeg || frameSize <= 0 ? nil : frameSize
        let lent = LentBuffers()
        return DeviceCaptureThread.start(name: "libcamera-\(id)", device: "libcamera camera \(id)", timeout: timeout, clock: clock,
                                         step: { () throws(CameraError) -> Bool in
            for index in lent.takeReturned() { try queue(camera, id, index, crops) }
            var fd = pollfd(fd: lc_camera_completion_fd(camera.pointer), events: Int16(POLLIN), revents: 0)
            do throws(SystemError) { _ = try Sys.poll(&fd, timeout: 200, "libcamera \(id)") } catch { throw .system(error) }
            var got = false
            var done = lc_completion()
            var r: Int32 = 0
            while true {
                r = lc_camera_next(camera.pointer, &done)
                guard r == 0 else { break }
                got = true
                let bytes = Int(done.bytes)
                guard done.ok != 0, let data = done.data, expected.map({ bytes >= $0 }) ?? (bytes > 0) else {
                    rejected()
                    try queue(camera, id, Int(done.index), crops)
                    continue
                }
                // The lease holds the handle: a buffer still read after a stop keeps the mapping.
                let lease = lent.lend(Int(done.index), holding: camera) { lc_camera_wake(camera.pointer) }
                let reported = done.has_crop != 0 && done.crop.2 > 0 && done.crop.3 > 0
                    ? SensorRectangle(x: done.crop.0, y: done.crop.1, width: done.crop.2, height: done.crop.3) : nil
                handler(RawFrame(format: format, bytes: UnsafeRawBufferPointer(start: data, count: bytes), stride: stride,
                                 sequence: UInt64(done.sequence), timestamp: wallClock(done.timestamp_ns), lease: lease,
                                 crop: crops?.region(Int(done.index), reported: reported)))
            }
            guard r == -EAGAIN else { throw .system(call: "libcamera next(\(id))", errno: -r) }
            return got
        }, release: {
            _ = lc_camera_stop(camera.pointer)
            // Outputs give their buffers back when detached, before a stop; a camera lost on its
            // own may still have some out: wait for them (the handle outlives them anyway).
            if lent.waitUntilAllReturned(timeout: 5) { camera.close() }
        }, lost: lost)
    }

    /// Gives a request back, with the crop of now; a camera that will not take it is lost, with
    /// libcamera's reason.
    static func queue(_ camera: LibcameraHandle, _ id: String, _ index: Int, _ crops: ScalerCropRequests?) throws(CameraError) {
        crops?.prepare(index, on: camera)
        let r = lc_camera_queue(camera.pointer, UInt32(index))
        guard r == 0 || r == -EACCES else { throw .system(call: "libcamera queueRequest(\(id))", errno: -r) }
    }

    /// A monotonic timestamp in nanoseconds as wall-clock seconds, as every input stamps.
    static func wallClock(_ ns: UInt64) -> Double {
        let mono = Double(ns) / 1e9
        guard mono > 0 else { return Clock.now() }
        return Clock.now() - (Clock.monotonic() - mono)
    }
}
