// The capture session: one actor, on its own serial queue, owning the active camera and
// every device setting. Each call validates first, then changes state without suspending
// (no `await` mid-change), rolls back on failure, and announces the result as one event.

import CameraCore
import Capture
import Foundation
import JPEG
import Logging

public struct SessionConfiguration: Sendable {
    public var camera: String?
    public var preset: String
    public var fps: Int
    public var streamQuality: Int
    public var captureQuality: Int

    public init(camera: String? = nil, preset: String = "1280x720", fps: Int = 30, streamQuality: Int = 80,
                captureQuality: Int = 92) {
        self.camera = camera
        self.preset = preset
        self.fps = fps
        self.streamQuality = streamQuality
        self.captureQuality = captureQuality
    }
}

/// What `prepare` may change; nil keeps the current value.
public struct PrepareRequest: Sendable, Equatable {
    public var camera: String?
    public var preset: String?
    public var width: Int?
    public var height: Int?
    public var fps: Int?
    public var pixelFormat: PixelFormat?

    public init(camera: String? = nil, preset: String? = nil, width: Int? = nil, height: Int? = nil,
                fps: Int? = nil, pixelFormat: PixelFormat? = nil) {
        self.camera = camera
        self.preset = preset
        self.width = width
        self.height = height
        self.fps = fps
        self.pixelFormat = pixelFormat
    }
}

public actor CaptureSession {
    private let executor: DispatchQueueExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    public nonisolated let hub = FrameHub()
    public nonisolated let events = EventHub()
    public nonisolated let cameras: [any CaptureDevice]
    public nonisolated let pipelineSettings: PipelineSettings
    private let captureQuality: Int
    private let logger: Logger

    private var camera: any CaptureDevice
    private var runState: SessionState.Run = .idle
    private var format: VideoFormat
    private var preset: String
    private var settings: DeviceSettings
    private var pipeline: FramePipeline?
    private var lastError: String?
    /// Bumped by every start, stop and switch: a reconnect loop of an older one gives up.
    private var generation = 0

    public init(cameras: [any CaptureDevice], configuration: SessionConfiguration,
                logger: Logger = Logger(label: "session")) throws(SessionError) {
        precondition(!cameras.isEmpty, "a session needs at least one camera")
        executor = DispatchQueueExecutor(label: "viewfinder.session")
        self.cameras = cameras
        self.logger = logger
        pipelineSettings = PipelineSettings(quality: configuration.streamQuality)
        captureQuality = configuration.captureQuality
        let chosen: any CaptureDevice
        if let id = configuration.camera {
            guard let c = cameras.first(where: { $0.descriptor.id == id }) else {
                throw .unknownCamera(id, known: cameras.map(\.descriptor.id))
            }
            chosen = c
        } else {
            chosen = cameras.first { $0.descriptor.position == .rear } ?? cameras[0]
        }
        camera = chosen
        let resolved = try Self.resolve(PrepareRequest(preset: configuration.preset, fps: configuration.fps),
                                        camera: chosen, currentPreset: configuration.preset,
                                        currentFps: configuration.fps)
        format = resolved.format
        preset = resolved.preset
        settings = DeviceSettings(for: chosen.capabilities)
    }

    // MARK: - State

    public func state() -> SessionState {
        let latest = hub.latestFrame
        let now = Clock.monotonic(), ramp = pipelineSettings.ramp
        var settings = camera.reported(self.settings)
        settings.zoom.factor = (ramp.factor(at: now) * 1000).rounded() / 1000
        settings.zoom.ramping = ramp.isRamping(at: now)
        return SessionState(
            state: runState, online: runState == .running,
            camera: SessionState.CameraRef(id: camera.descriptor.id, name: camera.descriptor.name,
                                           position: camera.descriptor.position.rawValue,
                                           kind: camera.descriptor.kind.rawValue),
            format: format, preset: preset,
            zoom: settings.zoom, focus: settings.focus, exposure: settings.exposure,
            whiteBalance: settings.whiteBalance, torch: settings.torch, orientation: settings.orientation,
            stream: .init(clients: hub.viewerCount, fps: (hub.fps * 10).rounded() / 10,
                          quality: pipelineSettings.quality),
            frames: .init(sequence: latest?.sequence ?? 0, dropped: pipeline?.failures ?? 0),
            error: lastError)
    }

    public var isRunning: Bool { runState == .running }

    // MARK: - Running

    /// startRunning: idempotent.
    @discardableResult
    public func start() throws(SessionError) -> SessionState {
        if runState != .running {
            do throws(CameraError) {
                pipeline = try launch(camera, format)
                runState = .running
                lastError = nil
            } catch {
                runState = .failed
                lastError = error.description
                announce()
                throw .cameraFailed(error.description)
            }
        }
        return announce()
    }

    /// stopRunning: releases the device; viewers keep a placeholder. Idempotent.
    @discardableResult
    public func stop() -> SessionState {
        if runState == .running || runState == .interrupted {
            generation += 1  // ends any reconnect loop
            halt()
            runState = .idle
            publishPlaceholder("STOPPED")
        }
        return announce()
    }

    /// Configures camera and format and runs. While running, reconfigures in place: viewers
    /// stay connected. On failure the previous configuration keeps running.
    @discardableResult
    public func prepare(_ request: PrepareRequest) throws(SessionError) -> SessionState {
        let target = try request.camera.map { id throws(SessionError) in try find(id) } ?? camera
        let resolved = try Self.resolve(request, camera: target, currentPreset: preset, currentFps: format.fps)
        try reconfigure(to: target, format: resolved.format)
        preset = resolved.preset
        return announce()
    }

    /// Switches rear ↔ front, or to the camera named. Transactional like `prepare`.
    @discardableResult
    public func switchCamera(to id: String?) throws(SessionError) -> SessionState {
        let target: any CaptureDevice
        if let id {
            target = try find(id)
        } else {
            let opposite: CameraDescriptor.Position? = switch camera.descriptor.position {
            case .rear: .front
            case .front: .rear
            default: nil
            }
            let index = cameras.firstIndex { $0 === camera } ?? 0
            target = cameras.first { opposite != nil && $0.descriptor.position == opposite }
                ?? cameras[(index + 1) % cameras.count]
        }
        let resolved = try Self.resolve(PrepareRequest(), camera: target, currentPreset: preset, currentFps: format.fps)
        try reconfigure(to: target, format: resolved.format)
        return announce()
    }

    // MARK: - Device settings (validate everything first, then change)

    @discardableResult
    public func zoom(_ r: ZoomRequest) throws(SessionError) -> SessionState {
        let caps = camera.capabilities.zoom
        if let rate = r.rate, rate <= 0 { throw .invalidValue("rate must be positive (zoom doublings per second)") }
        guard r.factor > 0 else { throw .invalidValue("factor must be positive") }
        let target = min(max(r.factor, caps.min), caps.max)
        let now = Clock.monotonic()
        let from = pipelineSettings.ramp.factor(at: now)
        pipelineSettings.ramp = ZoomRamp(from: from, to: target, rate: r.rate, start: now)
        settings.zoom.factor = target
        return announce()
    }

    @discardableResult
    public func focus(_ r: FocusRequest) throws(SessionError) -> SessionState {
        let caps = camera.capabilities
        var s = camera.reported(settings)
        let mode = r.mode ?? (r.lensPosition != nil ? "locked" : nil)
        guard let mode else { throw .invalidValue("mode is required (\(caps.focusModes.joined(separator: ", ")))") }
        guard caps.focusModes.contains(mode) else { throw .unsupported("focus mode '\(mode)'", supported: caps.focusModes) }
        if let lens = r.lensPosition {
            guard caps.lensPosition else { throw .unsupported("lensPosition", supported: []) }
            guard mode == "locked" else { throw .invalidValue("lensPosition applies to locked focus") }
            s.focus.lensPosition = min(max(lens, 0), 1)
        }
        if let p = r.point {
            guard caps.focusPointOfInterest else { throw .unsupported("a focus point of interest", supported: []) }
            s.focus.point = Self.clamp(p)
        }
        s.focus.mode = mode
        commit(s)
        return announce()
    }

    @discardableResult
    public func exposure(_ r: ExposureRequest) throws(SessionError) -> SessionState {
        let caps = camera.capabilities
        var s = camera.reported(settings)
        guard let mode = r.mode ?? (r.duration != nil || r.iso != nil ? "custom" : nil) ?? (r.bias != nil || r.point != nil ? s.exposure.mode : nil) else {
            throw .invalidValue("mode is required (\(caps.exposureModes.joined(separator: ", ")))")
        }
        guard caps.exposureModes.contains(mode) else { throw .unsupported("exposure mode '\(mode)'", supported: caps.exposureModes) }
        if r.duration != nil || r.iso != nil {
            guard mode == "custom" else { throw .invalidValue("duration and iso apply to custom exposure") }
        }
        s.exposure.duration = try Self.clamp(r.duration, to: caps.exposureDuration, "exposure duration") ?? s.exposure.duration
        s.exposure.iso = try Self.clamp(r.iso, to: caps.iso, "ISO") ?? s.exposure.iso
        s.exposure.bias = try Self.clamp(r.bias, to: caps.exposureBias, "exposure bias") ?? s.exposure.bias
        if let p = r.point {
            guard caps.exposurePointOfInterest else { throw .unsupported("an exposure point of interest", supported: []) }
            s.exposure.point = Self.clamp(p)
        }
        s.exposure.mode = mode
        commit(s)
        return announce()
    }

    @discardableResult
    public func whiteBalance(_ r: WhiteBalanceRequest) throws(SessionError) -> SessionState {
        let caps = camera.capabilities
        var s = camera.reported(settings)
        let mode = r.mode ?? (r.temperature != nil ? "locked" : nil)
        guard let mode else { throw .invalidValue("mode is required (\(caps.whiteBalanceModes.joined(separator: ", ")))") }
        guard caps.whiteBalanceModes.contains(mode) else {
            throw .unsupported("white balance mode '\(mode)'", supported: caps.whiteBalanceModes)
        }
        if r.temperature != nil && mode != "locked" {
            throw .invalidValue("a temperature locks white balance; use mode locked")
        }
        s.whiteBalance.temperature = try Self.clamp(r.temperature, to: caps.whiteBalanceTemperature,
                                                    "a white balance temperature") ?? s.whiteBalance.temperature
        s.whiteBalance.mode = mode
        commit(s)
        return announce()
    }

    @discardableResult
    public func torch(_ r: TorchRequest) throws(SessionError) -> SessionState {
        guard camera.capabilities.torch else { throw .torchUnavailable }
        guard ["on", "off", "auto"].contains(r.mode) else { throw .invalidValue("torch mode must be on, off or auto") }
        var s = settings
        s.torch.mode = r.mode
        if let level = r.level { s.torch.level = min(max(level, 0), 1) }
        if r.mode == "off" { s.torch.level = r.level.map { min(max($0, 0), 1) } ?? s.torch.level }
        if r.mode != "off" && s.torch.level == 0 { s.torch.level = 1 }
        commit(s)
        return announce()
    }

    @discardableResult
    public func orientation(_ r: OrientationRequest) throws(SessionError) -> SessionState {
        guard [0, 90, 180, 270].contains(r.rotation) else { throw .invalidValue("rotation must be 0, 90, 180 or 270") }
        settings.orientation.rotation = r.rotation
        if let m = r.mirrored { settings.orientation.mirrored = m }
        pipelineSettings.setOrientation(rotation: r.rotation, mirrored: settings.orientation.mirrored)
        return announce()
    }

    /// A photo ticket: the first frame exposed after now, at `quality`. Awaited by the
    /// caller outside the actor, so the session keeps serving while the photo is taken.
    public func capture(quality: Int?) throws(SessionError) -> CaptureTicket {
        guard runState == .running, let pipeline else { throw .notRunning }
        return pipeline.requestCapture(quality: quality ?? captureQuality, requested: Clock.now())
    }

    // MARK: - Device controls (power users)

    public func controls() throws(SessionError) -> [DeviceControl] {
        do throws(CameraError) { return try camera.controls() } catch { throw Self.map(error) }
    }

    /// Sets the camera's own controls by key; answers the controls after the change.
    public func setControls(_ values: [String: Int]) throws(SessionError) -> [DeviceControl] {
        do throws(CameraError) {
            try camera.setControls(values)
            let after = try camera.controls()
            announce()
            return after
        } catch { throw Self.map(error) }
    }

    private static func map(_ e: CameraError) -> SessionError {
        if case .unsupportedControl(let k, let known) = e { return .unsupported("control '\(k)'", supported: known) }
        return .cameraFailed(e.description)
    }

    /// Announces a stored photo on the event stream.
    public func announcePhoto(_ json: String) {
        events.publish(.init(name: "photo", data: json))
    }

    private func commit(_ s: DeviceSettings) {
        var s = s
        s.zoom = settings.zoom
        s.orientation = settings.orientation
        settings = s
        camera.apply(s)
    }

    /// A value for a continuous setting: 422 when the camera has no such control, else
    /// clamped into its range (as apps clamp `videoZoomFactor`).
    private static func clamp(_ v: Double?, to range: CameraCore.Range?, _ what: String) throws(SessionError) -> Double? {
        guard let v else { return nil }
        guard let range else { throw .unsupported(what, supported: []) }
        return range.clamp(v)
    }

    private static func clamp(_ p: Point) -> Point {
        Point(x: min(max(p.x, 0), 1), y: min(max(p.y, 0), 1))
    }

    // MARK: - Transactions

    private func reconfigure(to target: any CaptureDevice, format newFormat: VideoFormat) throws(SessionError) {
        let changingCamera = target !== camera
        guard runState == .running else {
            // Not running: prepare means "configure and start".
            let old = (camera, format, settings)
            camera = target
            format = newFormat
            if changingCamera { resetSettings(for: target) }
            do { try start() } catch {
                (camera, format, settings) = old
                pipelineSettings.ramp = .fixed(settings.zoom.factor)
                runState = .idle
                throw error
            }
            return
        }
        if !changingCamera && newFormat == format { return }
        if changingCamera {
            // Start the new camera first: if it fails, the old one never stopped.
            let newPipeline: FramePipeline
            do throws(CameraError) { newPipeline = try launch(target, newFormat) } catch {
                throw .cameraFailed("\(target.descriptor.id): \(error.description)")
            }
            let oldPipeline = pipeline
            oldPipeline?.deactivate()
            camera.stop()
            camera = target
            pipeline = newPipeline
            resetSettings(for: target)
        } else {
            // Same device: it can only be open once, so stop, try, and roll back on failure.
            halt()
            do throws(CameraError) { pipeline = try launch(camera, newFormat) } catch {
                do throws(CameraError) { pipeline = try launch(camera, format) } catch {
                    runState = .failed
                    lastError = error.description
                }
                throw .cameraFailed(error.description)
            }
        }
        format = newFormat
    }

    /// A new camera starts from its own defaults; orientation belongs to the output and stays.
    private func resetSettings(for device: any CaptureDevice) {
        let orientation = settings.orientation
        settings = DeviceSettings(for: device.capabilities)
        settings.orientation = orientation
        pipelineSettings.ramp = .fixed(settings.zoom.factor)
        device.apply(settings)
    }

    private func launch(_ device: any CaptureDevice, _ format: VideoFormat) throws(CameraError) -> FramePipeline {
        generation += 1
        let p = FramePipeline(hub: hub, settings: pipelineSettings, logger: logger)
        let launched = generation
        device.setInterruptionHandler { [weak self] error in
            Task { await self?.interrupted(error, generation: launched) }
        }
        device.apply(device === camera ? settings : DeviceSettings(for: device.capabilities))
        try device.start(format: format) { frame in p.handle(frame) }
        logger.info("camera \(device.descriptor.id) running at \(format.width)x\(format.height)@\(format.fps)")
        return p
    }

    // MARK: - Device loss

    /// The running device was lost: viewers get the placeholder, the state says so, and the
    /// device is reopened with backoff and the same format and settings when it returns.
    private func interrupted(_ error: CameraError, generation launched: Int) {
        guard launched == generation, runState == .running else { return }
        logger.warning("camera \(camera.descriptor.id) lost: \(error.description)")
        halt()
        runState = .interrupted
        lastError = error.description
        publishPlaceholder("NO SIGNAL")
        announce()
        let attempt = generation
        Task { await reconnect(attempt: attempt, delay: 0.25) }
    }

    private func reconnect(attempt: Int, delay: Double) async {
        try? await Task.sleep(nanoseconds: UInt64(delay * 1e9))
        guard attempt == generation, runState == .interrupted else { return }  // stopped or switched meanwhile
        do throws(CameraError) {
            pipeline = try launch(camera, format)
            runState = .running
            lastError = nil
            logger.info("camera \(camera.descriptor.id) is back")
            announce()
        } catch {
            lastError = error.description
            let next = generation
            Task { await reconnect(attempt: next, delay: min(delay * 2, 5)) }
        }
    }

    private func halt() {
        pipeline?.deactivate()
        camera.stop()
        pipeline = nil
    }

    private func find(_ id: String) throws(SessionError) -> any CaptureDevice {
        guard let c = cameras.first(where: { $0.descriptor.id == id }) else {
            throw .unknownCamera(id, known: cameras.map(\.descriptor.id))
        }
        return c
    }

    /// The supported format closest to what is asked (AVCaptureSession's preset matching).
    static func resolve(_ r: PrepareRequest, camera: any CaptureDevice, currentPreset: String,
                        currentFps: Int) throws(SessionError) -> (format: VideoFormat, preset: String) {
        var options = camera.formats
        if let pf = r.pixelFormat {
            options = options.filter { $0.pixelFormat == pf }
            guard !options.isEmpty else {
                throw .unsupported("pixel format \(pf.rawValue)",
                                   supported: Array(Set(camera.formats.map(\.pixelFormat.rawValue))).sorted())
            }
        }
        let presetName: String
        let preset: Preset
        if r.width != nil || r.height != nil {
            guard let w = r.width, let h = r.height, w > 0, h > 0 else {
                throw .invalidValue("width and height go together and must be positive")
            }
            presetName = "\(w)x\(h)"
            preset = .size(width: w, height: h)
        } else {
            presetName = r.preset ?? currentPreset
            guard let p = Preset(presetName) else {
                throw .unsupported("preset '\(presetName)'", supported: Preset.names)
            }
            preset = p
        }
        guard let option = preset.choose(from: options) else {
            throw .unsupported("no format", supported: [])
        }
        let wantFps = r.fps ?? currentFps
        guard wantFps > 0 else { throw .invalidValue("fps must be positive") }
        let fps = option.fps.min { abs($0 - wantFps) < abs($1 - wantFps) } ?? wantFps
        return (VideoFormat(pixelFormat: option.pixelFormat, width: option.width, height: option.height, fps: fps),
                presetName)
    }

    // MARK: - Announcing

    @discardableResult
    private func announce() -> SessionState {
        let s = state()
        if let data = try? JSONEncoder().encode(s) {
            events.publish(.init(name: "state", data: String(decoding: data, as: UTF8.self)))
        }
        return s
    }

    /// Viewers keep receiving a frame while nothing is captured; it goes through the real
    /// encoder at the session's size.
    private func publishPlaceholder(_ message: String) {
        let raw = PlaceholderFrame.render(width: format.width, height: format.height, message: message)
        guard let encoder = try? JPEGEncoder(),
              let jpeg = raw.withUnsafeBytes({ try? encoder.encodeYUYV($0, width: format.width, height: format.height,
                                                                       stride: format.width * 2, quality: 70) })
        else { return }
        hub.publish(EncodedFrame(jpeg: jpeg, width: format.width, height: format.height,
                                 sequence: hub.takeSequence(), timestamp: Clock.now(), online: false))
    }

    /// Publishes the placeholder if nothing has been published yet (idle at start-up).
    public func ensurePreviewFrame() {
        if hub.latestFrame == nil && runState != .running { publishPlaceholder("NO SIGNAL") }
    }
}
