// A camera session's graph, as AVCaptureSession holds one: inputs, outputs, and the
// connections between them. The inputs are the session's camera and its microphone (a switch
// between cameras is MultiCamSession's, between sessions); the outputs are added once,
// when the session is made, and kept across runs, format changes and switches — each owns
// its settings and what lasts, and is told when a run starts and ends. A connection says
// which input feeds which output, with what media, and whether it is enabled; a run's
// pipeline is made of the enabled connections of the input that runs.

import CameraCore
import Logging
import SystemSupport

final class CaptureGraph: Sendable {
    /// The video input: the session's one camera.
    let camera: any CaptureDevice
    /// Zoom, orientation and the preview's quality, read by the capture thread.
    let pipelineSettings: PipelineSettings
    /// Where the preview's parts and the live stream's fragments go to their clients.
    let hub = FrameHub()
    let live = LiveHub()
    let liveSub = LiveHub()
    let liveVP8 = LiveHub()

    let preview: PreviewOutput
    let photo: PhotoOutput
    let liveOutput: LiveOutput
    let subOutput: LiveOutput
    let vp8Output: LiveOutput
    let motion: MotionOutput
    let metadata: MetadataOutput
    let movie: MovieOutput
    /// The frames of a synchronized capture, when the configuration keeps them.
    let ring: FrameRing?
    /// Every output, in the order a frame is offered to them.
    let outputs: [any CaptureOutput]
    /// The microphones, by the camera they belong to (none: a mute camera).
    let microphones: [String: AudioInput]
    /// The audio data output (audio.wav, the level meter), when the session has sound.
    let audioData: AudioDataOutput?
    /// Every output, in the order the state lists them (OutputKind's).
    let listed: [any MediaOutput]
    /// Whether frames flow, for callers off the session's queue (the session writes it).
    let capturing = Locked(false)
    /// The preview's picture size as it is sent (turned with the orientation), for callers off
    /// the session's queue (RTSP's DESCRIBE of RTP/JPEG); written with every announced state.
    let pictureSize = Locked<(width: Int, height: Int)?>(nil)
    /// The session's frame counter: monotonic across runs and switches, shared by every output
    /// that takes a frame (and the placeholder), so the preview hub only ever moves forward.
    private let sequence = Locked(UInt64(1))

    /// One of the camera's live streams' output.
    func live(_ stream: LiveStreamName) -> LiveOutput {
        switch stream {
        case .main: liveOutput
        case .sub: subOutput
        case .vp8: vp8Output
        }
    }

    /// Takes the next sequence number.
    func takeSequence() -> UInt64 { sequence.withLock { n in defer { n += 1 }; return n } }

    init(camera: any CaptureDevice, microphones: [String: any AudioDevice], configuration c: SessionConfiguration,
         events: EventHub, logger: Logger) {
        self.camera = camera
        pipelineSettings = PipelineSettings(quality: c.streamQuality, subsampling: c.streamSubsampling)
        metadata = MetadataOutput(camera: "", rate: c.metadataRate, pool: c.pool) { events.publish(.metadata($0)) }
        photo = PhotoOutput(pool: c.pool)
        preview = PreviewOutput(hub: hub, settings: pipelineSettings, workers: c.streamWorkers, pool: c.pool, logger: logger)
        liveOutput = LiveOutput(.main, hub: live, settings: c.live, encoders: c.liveEncoders, pool: c.pool, logger: logger)
        subOutput = LiveOutput(.sub, hub: liveSub, settings: c.sub.under(c.live), encoders: c.liveEncoders, pool: c.pool, logger: logger)
        vp8Output = LiveOutput(.vp8, hub: liveVP8, settings: c.live, encoders: LiveEncoderChain([.libavcodec(.libvpx)], probe: false),
                               pool: c.pool, logger: logger)
        motion = MotionOutput(settings: c.motion, pool: c.pool)
        ring = c.frameRing > 0 ? FrameRing(span: c.frameRing, quality: c.captureQuality, pool: c.pool) : nil
        let audioData = microphones.isEmpty ? nil : AudioDataOutput()
        self.audioData = audioData
        let audioOutputs: [any AudioOutput] = audioData.map { [$0] } ?? []
        let inputs = microphones.reduce(into: [String: AudioInput]()) { inputs, entry in
            let camera = entry.key
            inputs[camera] = AudioInput(camera: camera, device: entry.value, outputs: audioOutputs) { level, muted in
                events.publish(.level(LevelEvent(camera: camera, level: level, muted: muted)))
            }
        }
        self.microphones = inputs
        movie = MovieOutput(configuration: c, live: live, liveOutput: liveOutput, motion: motion, microphones: inputs, logger: logger)
        outputs = [metadata, photo, preview, liveOutput, subOutput, vp8Output, motion] + (ring.map { [$0] } ?? []) + [movie]
        let order = OutputKind.allCases
        listed = (outputs as [any MediaOutput] + audioOutputs)
            .sorted { order.firstIndex(of: $0.kind)! < order.firstIndex(of: $1.kind)! }
    }

    /// The connections of a camera's inputs: its video device feeds every output that takes
    /// video; its microphone every output that takes audio, disabled while muted (as
    /// AVCaptureConnection.isEnabled: the outputs get silence, in time).
    func connections(of camera: String) -> [CaptureConnection] {
        var all = listed.filter { $0.mediaTypes.contains(.video) }
            .map { CaptureConnection(input: camera, output: $0.kind, mediaType: .video, enabled: true) }
        if let mic = microphones[camera] {
            let enabled = !mic.isMuted
            all += listed.filter { $0.mediaTypes.contains(.audio) }
                .map { CaptureConnection(input: mic.device.name, output: $0.kind, mediaType: .audio, enabled: enabled) }
        }
        return all
    }

    /// The outputs a run of `camera`'s video device offers frames to: those its connections reach.
    func connectedOutputs(of camera: String) -> [any CaptureOutput] {
        let connected = Set(connections(of: camera).filter { $0.enabled && $0.mediaType == .video }.map(\.output))
        return outputs.filter { connected.contains($0.kind) }
    }
}
