// SessionState: what `GET /api/session` answers and every `state` event carries.

import CameraCore
import Motion
import Movie

public struct SessionState: Sendable, Equatable, Codable {
    public enum Run: String, Sendable, Codable { case idle, running, interrupted, failed }

    public struct CameraRef: Sendable, Equatable, Codable {
        public var id: String, name: String, position: String, kind: String
    }
    public struct StreamInfo: Sendable, Equatable, Codable {
        public var clients: Int, fps: Double, quality: Int
        /// "422" (as the source) or "420" (`stream.subsampling`).
        public var subsampling: String
        /// Frames this camera may have in encode at once on the shared encode threads
        /// (`stream.workers`, at most one per core).
        public var workers: Int
    }
    public struct FrameInfo: Sendable, Equatable, Codable {
        public var sequence: UInt64, dropped: UInt64
    }

    public var state: Run
    public var online: Bool
    public var camera: CameraRef?
    public var format: VideoFormat?
    public var preset: String
    public var zoom: ZoomSetting
    public var focus: FocusSetting
    public var exposure: ExposureSetting
    public var whiteBalance: WhiteBalanceSetting
    public var torch: TorchSetting
    public var orientation: OrientationSetting
    /// The camera's own controls set by key and kept (`DeviceSettings.controls`), as read back.
    public var controls: [String: Int] = [:]
    public var stream: StreamInfo
    public var frames: FrameInfo
    public var error: String?
    /// The movie output's progress.
    public var recording: RecordingStatus = .inactive
    /// The metadata output: what it looks for and the codes in view.
    public var metadata = MetadataState(types: [], rectOfInterest: nil, objects: [])
    /// The motion output: its settings and what it sees now.
    public var motion = MotionState.off(MotionSettings())
    /// The camera's microphone, or null when it has none configured.
    public var audio: AudioState?
    /// The live H.264 streams (main and sub): size, rate, cap, encoder (issue 38).
    public var live: [LiveStreamReport] = []
    /// The capture graph: the session's inputs (the camera) and every output with its clients
    /// and figures (issue 36).
    public var inputs: [InputReport] = []
    public var outputs: [OutputReport] = []
    /// Which input feeds which output (AVCaptureConnection): media type, enabled.
    public var connections: [CaptureConnection] = []
    /// This camera's session is the main one (the one /api/session, /stream and /snapshot
    /// address); set by the multi-camera session, false for a session on its own.
    public var main = false

    /// Encodes `error: null` and `camera: null` explicitly, as the contract shows them.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(state, forKey: .state)
        try c.encode(online, forKey: .online)
        try c.encode(camera, forKey: .camera)
        try c.encode(format, forKey: .format)
        try c.encode(preset, forKey: .preset)
        try c.encode(zoom, forKey: .zoom)
        try c.encode(focus, forKey: .focus)
        try c.encode(exposure, forKey: .exposure)
        try c.encode(whiteBalance, forKey: .whiteBalance)
        try c.encode(torch, forKey: .torch)
        try c.encode(orientation, forKey: .orientation)
        try c.encode(controls, forKey: .controls)
        try c.encode(stream, forKey: .stream)
        try c.encode(frames, forKey: .frames)
        try c.encode(error, forKey: .error)
        try c.encode(recording, forKey: .recording)
        try c.encode(metadata, forKey: .metadata)
        try c.encode(motion, forKey: .motion)
        try c.encode(audio, forKey: .audio)
        try c.encode(live, forKey: .live)
        try c.encode(inputs, forKey: .inputs)
        try c.encode(outputs, forKey: .outputs)
        try c.encode(connections, forKey: .connections)
        try c.encode(main, forKey: .main)
    }
}
