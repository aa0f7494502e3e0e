// The movie output's vocabulary: what a recording is asked to do, why it ended, and what a
// finished movie is.

import CameraCore
import Foundation

public enum MovieCodec: String, Sendable, Codable, CaseIterable {
    /// H.264 through libx264: what browsers play.
    case h264
    /// The camera's JPEGs as they are (an MJPEG camera's untouched; a raw camera's encoded).
    case mjpeg
}

/// A timelapse: frames taken every `interval` seconds (or on request) and written at `fps`.
public struct Timelapse: Sendable, Equatable, Codable {
    public enum Trigger: String, Sendable, Codable { case interval, api }
    public var trigger: Trigger
    /// Seconds of wall-clock time between frames (`interval` trigger only).
    public var interval: Double?
    public var fps: Double

    public init(trigger: Trigger, interval: Double?, fps: Double) {
        self.trigger = trigger
        self.interval = interval
        self.fps = fps
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(trigger, forKey: .trigger)
        try c.encode(interval, forKey: .interval)
        try c.encode(fps, forKey: .fps)
    }
}

public struct RecordingOptions: Sendable, Equatable {
    public var maxDuration: Double?
    public var maxBytes: Int64?
    public var codec: MovieCodec
    public var timelapse: Timelapse?
    /// Whether the movie takes the camera's microphone (when it has one; never a timelapse).
    public var audio: Bool

    public init(maxDuration: Double? = nil, maxBytes: Int64? = nil, codec: MovieCodec = .h264, timelapse: Timelapse? = nil,
                audio: Bool = true) {
        self.audio = audio
        self.maxDuration = maxDuration
        self.maxBytes = maxBytes
        self.codec = codec
        self.timelapse = timelapse
    }
}

/// Why a recording ended.
public enum RecordingEndReason: String, Sendable, Codable {
    case stopped, maxDuration, maxBytes, diskFull, cameraLost, formatChanged, failed
    /// A motion event's movie reached its post-roll.
    case eventEnded
    /// Found unfinished at start-up (the server was killed or the power went) and repaired.
    case recovered
}

/// What started a recording: a call (`POST …/recording/start`), or motion (issue 28).
public enum MovieTrigger: String, Sendable, Codable { case manual, motion }

/// A motion movie's event (events merged into one movie: the first's start, the highest peak,
/// the last's end).
public typealias MovieEvent = EventTimes

/// A finished movie, as `GET /api/movies` lists it (and `{id}.json` beside it keeps it).
public struct MovieInfo: Sendable, Codable, Equatable {
    public var id: String
    public var url: String
    public var camera: String?
    public var codec: MovieCodec
    public var width: Int
    public var height: Int
    /// Clockwise degrees the player turns the picture (the MP4's display matrix).
    public var rotation: Int
    public var frames: Int
    public var duration: Double
    public var bytes: Int64
    public var startedAt: String
    public var reason: RecordingEndReason
    public var timelapse: Bool
    /// nil in records written before issue 28: a call started them.
    public var trigger: MovieTrigger?
    public var event: MovieEvent?
    /// The URL of the frame of the event's highest score, when one was kept.
    public var snapshot: String?
    /// Kept by the user: retention never deletes it.
    public var keep: Bool?
    /// The sound track, when the movie has one (nil in records written before issue 37).
    public var audio: MovieAudio?

    public init(id: String, url: String, camera: String?, codec: MovieCodec, width: Int, height: Int, rotation: Int,
                frames: Int, duration: Double, bytes: Int64, startedAt: String, reason: RecordingEndReason, timelapse: Bool,
                trigger: MovieTrigger = .manual, event: MovieEvent? = nil, snapshot: String? = nil, keep: Bool = false,
                audio: MovieAudio? = nil) {
        self.audio = audio
        self.id = id
        self.url = url
        self.camera = camera
        self.codec = codec
        self.width = width
        self.height = height
        self.rotation = rotation
        self.frames = frames
        self.duration = duration
        self.bytes = bytes
        self.startedAt = startedAt
        self.reason = reason
        self.timelapse = timelapse
        self.trigger = trigger
        self.event = event
        self.snapshot = snapshot
        self.keep = keep
    }

    /// Every field spelled out (`event` and `snapshot` null, `trigger` and `keep` their defaults).
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(url, forKey: .url)
        try c.encode(camera, forKey: .camera)
        try c.encode(codec, forKey: .codec)
        try c.encode(width, forKey: .width)
        try c.encode(height, forKey: .height)
        try c.encode(rotation, forKey: .rotation)
        try c.encode(frames, forKey: .frames)
        try c.encode(duration, forKey: .duration)
        try c.encode(bytes, forKey: .bytes)
        try c.encode(startedAt, forKey: .startedAt)
        try c.encode(reason, forKey: .reason)
        try c.encode(timelapse, forKey: .timelapse)
        try c.encode(trigger ?? .manual, forKey: .trigger)
        try c.encode(event, forKey: .event)
        try c.encode(snapshot, forKey: .snapshot)
        try c.encode(keep ?? false, forKey: .keep)
        try c.encode(audio, forKey: .audio)
    }

    /// Seconds to the millisecond: what a client can use, not float noise.
    static func seconds(_ s: Double) -> Double { (s * 1000).rounded() / 1000 }
}

/// A movie's sound track: its codec and format.
public struct MovieAudio: Sendable, Codable, Equatable {
    public var codec: String
    public var sampleRate: Int
    public var channels: Int

    public init(codec: String, sampleRate: Int, channels: Int) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
    }

    init(_ track: AudioTrackInfo) { self.init(codec: track.codec.rawValue, sampleRate: track.sampleRate, channels: track.channels) }
}

/// A recording's progress, as the session state shows it.
public struct RecordingStatus: Sendable, Equatable, Codable {
    public var active: Bool
    public var id: String?
    public var codec: MovieCodec?
    public var startedAt: String?
    public var duration: Double
    public var frames: Int
    public var bytes: Int64
    public var dropped: Int
    public var timelapse: Timelapse?

    public static let inactive = RecordingStatus(active: false, id: nil, codec: nil, startedAt: nil, duration: 0,
                                                 frames: 0, bytes: 0, dropped: 0, timelapse: nil)

    /// Encodes nulls explicitly, as the contract shows them.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(active, forKey: .active)
        try c.encode(id, forKey: .id)
        try c.encode(codec, forKey: .codec)
        try c.encode(startedAt, forKey: .startedAt)
        try c.encode((duration * 1000).rounded() / 1000, forKey: .duration)
        try c.encode(frames, forKey: .frames)
        try c.encode(bytes, forKey: .bytes)
        try c.encode(dropped, forKey: .dropped)
        try c.encode(timelapse, forKey: .timelapse)
    }
}

/// How a recording ended: why, and the movie kept (nil when nothing was written).
public struct RecordingOutcome: Sendable, Equatable {
    public var id: String
    public var camera: String?
    public var reason: RecordingEndReason
    public var movie: MovieInfo?
    /// What went wrong, for `diskFull` and `failed`.
    public var message: String?
}
