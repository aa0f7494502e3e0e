// The capture session: one actor, on its own serial queue, owning the active camera. It
// keeps the lifecycle and the transactions; each call validates first (SettingsValidation,
// FormatResolution), then changes state without suspending (no `await` mid-change), rolls
// back on failure, and announces the result as one typed event. The device owns its
// settings: the session keeps what the camera answered, never what was asked.
//
// Settings calls: CaptureSession+Settings.swift. Device loss: CaptureSession+Recovery.swift.

import CameraCore
import Foundation
import JPEG
import Logging
import Metadata
import Motion
import Movie
import SystemSupport

public actor CaptureSession {
    private let executor: DispatchQueueExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    public nonisolated let hub = FrameHub()
    /// The live H.264 stream's clients and fragments (LiveOutput publishes to it).
    public nonisolated let live = LiveHub()
    /// Where state and photo events go: shared by every camera's session of an application.
    public nonisolated let events: EventHub
    public nonisolated let cameras: [any CaptureDevice]
    public nonisolated let pipelineSettings: PipelineSettings
    /// The metadata output: kept across starts, stops and format changes, as its settings are.
    nonisolated let metadata: MetadataOutput
    let configuration: SessionConfiguration
    let logger: Logger

    var camera: any CaptureDevice
    var runState: SessionState.Run = .idle { didSet { runMirror.withLock { $0 = runState } } }
    private nonisolated let runMirror = Locked(SessionState.Run.idle)
    /// Whether frames flow, for callers off the actor that must not wait for it (an RTSP
    /// DESCRIBE is answered 503 rather than left hanging on a camera that is not running).
    public nonisolated var isCapturing: Bool { runMirror.withLock { $0 == .running } }
    var format: VideoFormat
    var preset: String
    /// The device's settings as it last answered them (read back), plus the session's own
    /// parts: the zoom factor and the orientation.
    var settings: DeviceSettings
    var pipeline: FramePipeline?
    var lastError: String?
    /// Bumped by every start, stop and switch: loops of an older one (reconnect, read-back,
    /// zoom ramp) give up.
    var generation = 0
    var recovery = Backoff()
    /// A zoom ramp's lens steps are still being written (the ramp's time may be over before
    /// the last step reached the device): the state keeps saying `ramping` until then.
    var lensRamping = false
    /// Which lens-stepping task is the current one (a newer zoom call supersedes it).
    var lensRampToken = 0
    /// The movie output, while recording.
    var recorder: MovieRecorder?
    /// The live stream's client feeding `recorder`, when the recording shares the live encode.
    var liveRecording: LiveRecording?
    /// The motion settings: kept across starts, stops and switches (CaptureSession+Motion).
    var motionSettings: MotionSettings
    nonisolated let motionFigures = Locked(MotionFigures())
    /// The pre-roll ring, while motion recording is on and the camera runs; the event movie being written.
    var motionRecording: MotionRecording?
    var eventMovie: EventMovie?

    public init(cameras: [any CaptureDevice], configuration: SessionConfiguration, events: EventHub = EventHub(),
                logger: Logger = Logger(label: "session")) throws(SessionError) {
        precondition(!cameras.isEmpty, "a session needs at least one camera")
        executor = DispatchQueueExecutor(label: "viewfinder.session")
        self.events = events
        self.cameras = cameras
        self.logger = logger
        self.configuration = configuration
        pipelineSettings = PipelineSettings(quality: configuration.streamQuality, subsampling: configuration.streamSubsampling)
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
        motionSettings = configuration.motion
        metadata = MetadataOutput(camera: chosen.descriptor.id, rate: configuration.metadataRate, pool: configuration.pool) { [events] in
            events.publish(.metadata($0))
        }
        let resolved = try FormatResolution.resolve(PrepareRequest(preset: configuration.preset, fps: configuration.fps),
                                                    formats: chosen.formats, currentPreset: configuration.preset,
                                                    currentFps: configuration.fps)
        format = resolved.format
        preset = resolved.preset
        settings = DeviceSettings(for: chosen.capabilities)
        pipelineSettings.opticalMax = chosen.capabilities.zoom.opticalMax
    }

    public var isRunning: Bool { runState == .running }


    // MARK: - Running

    /// startRunning: idempotent.
    @discardableResult
    public func start() throws(SessionError) -> SessionState {
        if runState != .running {
            if pipeline != nil { halt() }  // a camera reopened after a loss, still waiting for its first frame
            do throws(CameraError) {
                pipeline = try launch(camera, format)
                runState = .running
                lastError = nil
                updateMotionRecording()
            } catch {
                runState = .failed
                lastError = error.description
                announce()
                throw .camera(error)
            }
        }
        return announce()
    }

    /// stopRunning: releases the device; viewers keep a placeholder. Idempotent.
    @discardableResult
    public func stop() -> SessionState {
        if runState == .running || runState == .interrupted {
            generation += 1  // ends any reconnect, read-back or ramp loop
            endRecording(.stopped)
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
        let resolved = try FormatResolution.resolve(request, formats: target.formats, currentPreset: preset,
                                                    currentFps: format.fps)
        try reconfigure(to: target, format: resolved.format)
        preset = resolved.preset
        return announce()
    }

    /// A photo ticket: the first frame exposed after now, at `quality`. Awaited by the
    /// caller outside the actor, so the session keeps serving while the photo is taken.
    public func capture(quality: Int?) throws(SessionError) -> CaptureTicket {
        guard runState == .running, let photos = pipeline?.output(PhotoOutput.self) else { throw .notRunning }
        return photos.request(quality: quality ?? configuration.captureQuality, requested: Clock.now())
    }

    /// The ring of this run's last frames, for a synchronized capture; awaited outside the
    /// actor as a photo ticket is.
    public func frameRing() throws(SessionError) -> FrameRing {
        guard runState == .running, let ring = pipeline?.output(FrameRing.self) else { throw .notRunning }
        return ring
    }

    /// Announces a stored photo on the event stream.
    public func announcePhoto(_ photo: PhotoInfo) {
        events.publish(.photo(photo))
    }

    // MARK: - Transactions

    private func reconfigure(to target: any CaptureDevice, format newFormat: VideoFormat) throws(SessionError) {
        let changingCamera = target !== camera
        guard runState == .running else {
            // Not running: prepare means "configure and start". A camera reopened after a loss
            // and still dark is closed first, before `camera` names another device.
            if pipeline != nil { halt() }
            let old = (camera, format, settings)
            camera = target
            format = newFormat
            if changingCamera { resetSettings(for: target) }
            do { try start() } catch {
                (camera, format, settings) = old
                pipelineSettings.ramp = .fixed(settings.zoom.optical * settings.zoom.digital)
                pipelineSettings.opticalMax = camera.capabilities.zoom.opticalMax
                runState = .idle
                throw error
            }
            return
        }
        if !changingCamera && newFormat == format { return }
        endRecording(.formatChanged)  // a movie has one format; the next start records the new one
        if changingCamera {
            // Start the new camera first: if it fails, the old one never stopped.
            let oldSettings = settings
            resetSettings(for: target)
            let newPipeline: FramePipeline
            do throws(CameraError) { newPipeline = try launch(target, newFormat) } catch {
                settings = oldSettings
                pipelineSettings.ramp = .fixed(settings.zoom.factor)
                pipelineSettings.opticalMax = camera.capabilities.zoom.opticalMax
                throw .switchFailed(id: target.descriptor.id, cause: error)
            }
            pipeline?.deactivate()
            camera.stop()
            camera = target
            pipeline = newPipeline
        } else {
            // Same device: it can only be open once, so stop, try, and roll back on failure.
            halt()
            do throws(CameraError) { pipeline = try launch(camera, newFormat) } catch {
                do throws(CameraError) { pipeline = try launch(camera, format) } catch {
                    // It ran a moment ago: lost like an unplugged camera, reopened with backoff.
                    logger.warning("camera \(camera.descriptor.id) lost: \(error.description)")
                    lost(error)
                }
                throw .camera(error)
            }
        }
        format = newFormat
    }

    /// A new camera starts from its own defaults; orientation belongs to the output and stays.
    private func resetSettings(for device: any CaptureDevice) {
        let orientation = settings.orientation
        settings = DeviceSettings(for: device.capabilities)
        settings.orientation = orientation
        pipelineSettings.ramp = .fixed(1)
        pipelineSettings.opticalMax = device.capabilities.zoom.opticalMax
    }

    /// Starts `device` with the session's settings: the camera writes them all after its
    /// stream-on, and what it then reads back becomes the session's settings.
    func launch(_ device: any CaptureDevice, _ format: VideoFormat) throws(CameraError) -> FramePipeline {
        generation += 1
        metadata.setCamera(device.descriptor.id)
        let launched = generation
        // The outputs of this run of the camera; a recording attaches its movie output later.
        let name = device.descriptor.id
        let outputs: [any CaptureOutput] = [
            metadata,
            PhotoOutput(name: name, pool: configuration.pool),
            PreviewOutput(hub: hub, settings: pipelineSettings, workers: configuration.streamWorkers, name: name,
                          pool: configuration.pool, logger: logger),
            LiveOutput(hub: live, settings: configuration.live, name: name, pool: configuration.pool, logger: logger),
            makeMotionOutput(camera: name),
        ] + (configuration.frameRing > 0 ? [FrameRing(name: name, span: configuration.frameRing, quality: configuration.captureQuality,
                                                      pool: configuration.pool)] : [])
        let p = FramePipeline(outputs: outputs, settings: pipelineSettings, nextSequence: { [hub] in hub.takeSequence() },
                              firstFrame: { [weak self] in Task { await self?.delivering(generation: launched) } })
        device.setInterruptionHandler { [weak self] error in
            Task { await self?.interrupted(error, generation: launched) }
        }
        // `settings` is already the new camera's when switching (reset before the launch).
        let wanted = settings
        let id = device.descriptor.id
        // Not running yet: a V4L2 camera keeps these for after its stream-on.
        do throws(CameraError) { _ = try device.apply(SettingsChange(old: nil, new: wanted)) } catch {
            logger.warning("camera \(id) before its start: \(error.description)")
        }
        do throws(CameraError) { try device.start(format: format) { frame in p.handle(frame) } } catch {
            p.deactivate()  // its encode threads end now, not at the next retry
            throw error
        }
        for refusal in device.takeRestoreRefusals() {
            logger.warning("camera \(id) kept its own value after stream-on: \(refusal.description); the state shows what it has")
        }
        settings = Self.keepingSessionParts(device.readBack(wanted) ?? wanted, of: wanted)
        logger.info("camera \(device.descriptor.id) running at \(format.width)x\(format.height)@\(format.fps)")
        startReadBack(generation: launched)
        return p
    }

    /// The zoom factor, its digital part and the orientation are the session's, not the device's.
    static func keepingSessionParts(_ device: DeviceSettings, of session: DeviceSettings) -> DeviceSettings {
        var s = device
        s.zoom.factor = session.zoom.factor
        s.zoom.digital = session.zoom.digital
        s.zoom.min = session.zoom.min
        s.zoom.max = session.zoom.max
        s.orientation = session.orientation
        return s
    }

    func halt() {
        if let ring = motionRecording {  // the event movie ends with the stream it records
            motionRecording = nil
            if let recorder = ring.stop() { eventMovieDone(recorder, .stopped) }
        }
        pipeline?.deactivate()
        camera.stop()
        pipeline = nil
        metadata.cameraStopped()
    }

    private func find(_ id: String) throws(SessionError) -> any CaptureDevice {
        guard let c = cameras.first(where: { $0.descriptor.id == id }) else {
            throw .unknownCamera(id, known: cameras.map(\.descriptor.id))
        }
        return c
    }

    // MARK: - Announcing

    @discardableResult
    func announce() -> SessionState {
        let s = state()
        events.publish(.state(s))
        return s
    }

    /// Viewers keep receiving a frame while nothing is captured; it goes through the real
    /// encoder at the session's size.
    func publishPlaceholder(_ message: String) {
        let raw = configuration.placeholder(format.width, format.height, message)
        guard raw.count >= format.width * format.height * 2, let encoder = try? JPEGEncoder(),
              let jpeg = raw.withUnsafeBytes({ try? encoder.encodeYUYV($0, width: format.width, height: format.height,
                                                                       stride: format.width * 2, quality: 70) })
        else { return }
        let timestamp = Clock.now()
        let part = jpeg.withUnsafeBytes { Multipart.framing(timestamp: EncodedFrame.format(timestamp)).wrap($0) }
        hub.publish(EncodedFrame(bytes: part.bytes, jpegRange: part.jpeg, width: format.width, height: format.height,
                                 sequence: hub.takeSequence(), timestamp: timestamp, online: false))
    }

    /// Publishes the placeholder if nothing has been published yet (idle at start-up).
    public func ensurePreviewFrame() {
        if hub.latestFrame == nil && runState != .running { publishPlaceholder("NO SIGNAL") }
    }
}
