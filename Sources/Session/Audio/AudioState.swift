// What the state says of a session's sound (`audio`), and what a level event carries.

import CameraCore

public struct AudioState: Sendable, Equatable, Codable {
    /// Where the gain is applied: the device's mixer (stepped, read back), or in software.
    public enum GainControl: String, Sendable, Codable { case mixer, digital }

    /// The device: `synthetic`, an ALSA PCM (`auto` shows the one it found).
    public var device: String
    public var running: Bool
    /// The audio connections are disabled: every output gets silence, in time.
    public var muted: Bool
    public var gainDb: Double
    public var gainControl: GainControl
    /// The last level reading (a tenth of a second), while running.
    public var peakDb: Double?
    public var rmsDb: Double?
    /// What the device captures, while running.
    public var format: AudioFormat?
    /// Overruns since the device was made (each recovered, its gap filled with silence).
    public var overruns: UInt64
    /// Why there is no sound (a missing or failing device), or null.
    public var error: String?

    public init(device: String, running: Bool, muted: Bool, gainDb: Double, gainControl: GainControl,
                peakDb: Double?, rmsDb: Double?, format: AudioFormat?, overruns: UInt64, error: String?) {
        self.device = device
        self.running = running
        self.muted = muted
        self.gainDb = gainDb
        self.gainControl = gainControl
        self.peakDb = peakDb
        self.rmsDb = rmsDb
        self.format = format
        self.overruns = overruns
        self.error = error
    }

    /// Spells the nulls out, as the contract shows them.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(device, forKey: .device)
        try c.encode(running, forKey: .running)
        try c.encode(muted, forKey: .muted)
        try c.encode(gainDb, forKey: .gainDb)
        try c.encode(gainControl, forKey: .gainControl)
        try c.encode(peakDb, forKey: .peakDb)
        try c.encode(rmsDb, forKey: .rmsDb)
        try c.encode(format, forKey: .format)
        try c.encode(overruns, forKey: .overruns)
        try c.encode(error, forKey: .error)
    }
}

/// A level reading of a camera's microphone (SSE `level`, for clients of `?levels=1`).
public struct LevelEvent: Sendable, Equatable, Codable {
    public var camera: String
    public var peakDb: Double
    public var rmsDb: Double
    /// Whether the connection is muted (the reading is then of the silence sent).
    public var muted: Bool

    public init(camera: String, level: AudioLevel, muted: Bool) {
        self.camera = camera
        peakDb = level.peakDb
        rmsDb = level.rmsDb
        self.muted = muted
    }
}

/// `POST …/session/audio`: what to change (each optional).
public struct AudioRequest: Sendable {
    public var muted: Bool?
    public var gainDb: Double?
    public init(muted: Bool? = nil, gainDb: Double? = nil) {
        self.muted = muted
        self.gainDb = gainDb
    }
}
