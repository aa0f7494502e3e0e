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

    /// Where state and photo events go: shared by every camera's session of an application.
    public nonisolated let events: EventHub
    /// The inputs, the outputs (kept across runs) and their connections.
    nonisolated let graph: CaptureGraph
    let configuration: SessionConfiguration
    let logger: Logger
    /// What the reopenings' backoffs (camera and microphone) wait on and the zoom ramp runs on: the
    /// system's time, or a test's.
    let timekeeper: any Timekeeper

    /// The session's camera, at `format` (chosen as `preset`). One camera a session, as the
    /// server has them: a switch between cameras is MultiCamSession's, moving its main one.
    public nonisolated let camera: any CaptureDevice
    var format: VideoFormat
    var preset: String
    /// The device's settings as it last answered them (read back), plus the session's own
    /// parts: the zoom factor and the orientation.
    var settings: DeviceSettings
    /// The run under way, if any, and the reopening after a loss.
    var run = SessionRun() { didSet { graph.capturing.withLock { $0 = run.state == .running } } }
    /// The lens-stepping of a zoom ramp (CaptureSession+Settings).
    var lens = LensSteps()
    /// The continuous move under way (CaptureSession+Move).
    var moving = ContinuousMotion()

    public nonisolated var hub: FrameHub { graph.hub }
    /// The live H.264 main stream's clients and access units (LiveOutput publishes to it).
    public nonisolated var live: LiveHub { graph.live }
    /// The hub of one of the live streams (`.main` is `live`).
    public nonisolated func live(_ stream: LiveStreamName) -> LiveHub { graph.live(stream).hub }
    public nonisolated var pipelineSettings: PipelineSettings { graph.pipelineSettings }
    /// The metadata output: kept across starts, stops and format changes, as its settings are.
    nonisolated var metadata: MetadataOutput { graph.metadata }
    /// Whether frames flow, for callers off the actor that must not wait for it (an RTSP
    /// DESCRIBE is answered 503 rather than left hanging on a camera that is not running).
    public nonisolated var isCapturing: Bool { graph.capturing.withLock { $0 } }

    /// `microphones`: the camera's microphone, by camera id (a camera without one is mute).
    public init(camera: any CaptureDevice, microphones: [String: any AudioDevice] = [:],
                configuration: SessionConfiguration, events: EventHub = EventHub(),
                logger: Logger = Logger(label: "session"),
                timekeeper: any Timekeeper = SystemTimekeeper()) throws(SessionError) {
        executor = DispatchQueueExecutor(label: "viewfinder.session")
        self.events = events
        self.logger = logger
        self.timekeeper = timekeeper
        self.configuration = configuration
        self.camera = camera
        let resolved = try FormatResolution.resolve(PrepareRequest(preset: configuration.preset, fps: configuration.fps),
                                                    formats: camera.formats, currentPreset: configuration.preset,
                                                    currentFps: configuration.fps)
        format = resolved.format
        preset = resolved.preset
        settings = DeviceSettings(for: camera.capabilities)
        graph = CaptureGraph(camera: camera, microphones: microphones, configuration: configuration, events: events, logger: logger)
        graph.pipelineSettings.opticalMax = camera.capabilities.zoom.opticalMax
        graph.motion.setEventHandler { [weak self] event in Task { await self?.motionEvent(event) } }
        graph.movie.onCompletion { [weak self] done in Task { await self?.movieCompleted(done) } }
    }

    public var isRunning: Bool { run.state == .running }

    // MARK: - Running

    /// startRunning: idempotent.
    @discardableResult
    public func start() throws(SessionError) -> SessionState {
        if run.state != .running {
            if run.pipeline != nil { halt() }  // a camera reopened after a loss, still waiting for its first frame
            do throws(CameraError) {
                run.pipeline = try launch(camera, format)
                run.state = .running
                run.error = nil
                startAudio()
            } catch {
                run.state = .failed
                run.error = error.description
                announce()
                throw .camera(error)
            }
        }
        return announce()
    }

    /// stopRunning: releases the device; viewers keep a placeholder. Idempotent.
    @discardableResult
    public func stop() -> SessionState {
        if run.state == .running || run.state == .interrupted {
            run.number += 1  // ends any reconnect, read-back or ramp loop
            endRecording(.stopped)
            halt()
            stopAudio()
            run.state = .idle
            publishPlaceholder("STOPPED")
        }
        return announce()
    }

    /// Configures camera and format and runs. While running, reconfigures in place: viewers
    /// stay connected. On failure the previous configuration keeps running.
    @discardableResult
    public func prepare(_ request: PrepareRequest) throws(SessionError) -> SessionState {
        if let id = request.camera, id != camera.descriptor.id {
            throw .invalidValue("camera: this is camera '\(camera.descriptor.id)'s session (a switch is the main session's)")
        }
        let resolved = try FormatResolution.resolve(request, formats: camera.formats, currentPreset: preset,
                                                    currentFps: format.fps)
        // Named before the start: the state the start announces has the preset with its format.
        let old = preset
        preset = resolved.preset
        do { try reconfigure(format: resolved.format) } catch {
            preset = old
            announce()  // what runs (or not) after the failure, with the format that is kept
            throw error
        }
        return announce()
    }

    /// Chooses the format as `prepare` would, without starting a camera that is not running
    /// (a saved state replayed before the first start: the camera opens at it); a running one
    /// is prepared in place.
    @discardableResult
    public func configure(_ request: PrepareRequest) throws(SessionError) -> SessionState {
        guard run.state == .idle || run.state == .failed, run.pipeline == nil else { return try prepare(request) }
        let resolved = try FormatResolution.resolve(request, formats: camera.formats, currentPreset: preset,
                                                    currentFps: format.fps)
        format = resolved.format
        preset = resolved.preset
        return announce()
    }

    /// A photo ticket: the first frame exposed after now, at `quality`. Awaited by the
    /// caller outside the actor, so the session keeps serving while the photo is taken.
    public func capture(quality: Int?) throws(SessionError) -> CaptureTicket {
        guard run.state == .running else { throw .notRunning }
        return graph.photo.request(quality: quality ?? configuration.captureQuality, requested: Clock.now())
    }

    /// The ring of this run's last frames, for a synchronized capture; awaited outside the
    /// actor as a photo ticket is.
    public func frameRing() throws(SessionError) -> FrameRing {
        guard run.state == .running, let ring = graph.ring else { throw .notRunning }
        return ring
    }

    /// Announces a stored photo on the event stream.
    public func announcePhoto(_ photo: PhotoInfo) {
        events.publish(.photo(photo))
    }

    // MARK: - Transactions

    private func reconfigure(format newFormat: VideoFormat) throws(SessionError) {
        guard run.state == .running else {
            // Not running: prepare means "configure and start". A camera reopened after a loss
            // and still dark is closed first.
            if run.pipeline != nil { halt() }
            let old = format
            format = newFormat
            do { try start() } catch {
                format = old
                run.state = .idle
                throw error
            }
            return
        }
        if newFormat == format { return }
        endRecording(.formatChanged)  // a movie has one format; the next start records the new one
        // The device can only be open once, so stop, try, and roll back on failure.
        halt()
        do throws(CameraError) { run.pipeline = try launch(camera, newFormat) } catch {
            do throws(CameraError) { run.pipeline = try launch(camera, format) } catch {
                // It ran a moment ago: lost like an unplugged camera, reopened with backoff.
                logger.warning("camera \(camera.descriptor.id) lost: \(error.description)")
                lost(error)
            }
            throw .camera(error)
        }
        format = newFormat
    }

    /// Starts `device` with the session's settings: the camera writes them all after its
    /// stream-on, and what it then reads back becomes the session's settings. The run's
    /// pipeline begins (its outputs told the run started) before the device starts.
    func launch(_ device: any CaptureDevice, _ format: VideoFormat) throws(CameraError) -> FramePipeline {
        run.number += 1
        let launched = run.number
        // The zoom ramp's curve runs on the session's clock (its timekeeper).
        let transform: @Sendable () -> FrameTransform = { [pipelineSettings, timekeeper] in pipelineSettings.transform(at: timekeeper.now) }
        let p = FramePipeline(run: CaptureRun(camera: device.descriptor.id, format: format, number: launched),
                              outputs: graph.connectedOutputs(of: device.descriptor.id),
                              transform: transform,
                              nextSequence: { [graph] in graph.takeSequence() },
                              firstFrame: { [weak self] in Task { await self?.delivering(generation: launched) } })
        p.begin()
        device.setInterruptionHandler { [weak self] error in
            Task { await self?.interrupted(error, generation: launched) }
        }
        device.setCropSource(transform)  // the same transform: a camera that crops takes its part
        // `settings` is already the new camera's when switching (reset before the launch).
        let wanted = settings
        let id = device.descriptor.id
        // Not running yet: a V4L2 camera keeps these for after its stream-on.
        do throws(CameraError) { _ = try device.apply(SettingsChange(old: nil, new: wanted)) } catch {
            logger.warning("camera \(id) before its start: \(error.description)")
        }
        do throws(CameraError) { try device.start(format: format) { frame in p.handle(frame) } } catch {
            p.deactivate()  // its outputs' lanes close now, not at the next retry
            throw error
        }
        for refusal in device.takeRestoreRefusals() {
            logger.warning("camera \(id) kept its own value after stream-on: \(refusal.description); the state shows what it has")
        }
        settings = (device.readBack(wanted) ?? wanted).keepingSessionParts(of: wanted)
        run.ran = true
        logger.info("camera \(device.descriptor.id) running at \(format.width)x\(format.height)@\(format.fps)")
        startReadBack(generation: launched)
        return p
    }

    func halt() {
        run.pipeline?.deactivate()  // its outputs told the run ended (the event movie ends with its stream)
        camera.stop()
        run.pipeline = nil
    }

    // MARK: - Announcing

    @discardableResult
    func announce() -> SessionState {
        let s = state()
        graph.pictureSize.withLock { $0 = s.format.map { FrameTransform(rotation: s.orientation.rotation).outputSize(width: $0.width, height: $0.height) } }
        events.publish(.state(s))
        return s
    }

    /// The preview's picture size as the last announced state has it (nil before any format),
    /// readable off the session's queue.
    public nonisolated var pictureSize: (width: Int, height: Int)? { graph.pictureSize.withLock { $0 } }

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
                                 sequence: graph.takeSequence(), timestamp: timestamp, online: false))
    }

    /// Publishes the placeholder if nothing has been published yet (idle at start-up).
    public func ensurePreviewFrame() {
        if hub.latestFrame == nil && run.state != .running { publishPlaceholder("NO SIGNAL") }
    }
}
