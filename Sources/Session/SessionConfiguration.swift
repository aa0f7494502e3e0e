// What a session is started with: the format and qualities from config.json, how
// often devices are read back, and the placeholder frame the application draws.

import CameraCore
import Foundation
import Motion
import Movie

/// Renders the raw YUYV frame shown while nothing is captured ("NO SIGNAL", "STOPPED").
public typealias PlaceholderRenderer = @Sendable (_ width: Int, _ height: Int, _ message: String) -> [UInt8]

public struct SessionConfiguration: Sendable {
    public var preset: String
    public var fps: Int
    public var streamQuality: Int
    /// The preview's chroma: as the source (4:2:2) or at most 4:2:0.
    public var streamSubsampling: ChromaSubsampling
    /// Encode threads per running camera (µStreamer's `--workers`); at least 1.
    public var streamWorkers: Int
    public var captureQuality: Int
    /// How often device values are read back while running (automatic modes move them).
    public var readBackInterval: Double
    public var placeholder: PlaceholderRenderer
    /// Where movies are written (shared by every camera's session).
    public var movies: MovieStore
    /// libx264's preset for H.264 movies.
    public var moviePreset: String
    /// Metadata scans a second, at most.
    public var metadataRate: Double
    /// The live H.264 main stream's keyframe interval, rate control and preset.
    public var live: LiveEncoderSettings
    /// The sub stream's: 640 wide at the camera's aspect, 15 fps, 500 kbit/s unless configured;
    /// never more than half the main stream's width and height (`LiveEncoderSettings.under`).
    public var sub = LiveEncoderSettings.sub
    /// The encoders both streams are made by, in order (`live.encoders`): the application's one
    /// chain, shared by every camera. Without one: libx264 alone.
    public var liveEncoders = LiveEncoderChain.software
    /// The motion output's settings at start (`motion`, or `cameras[].motion`).
    public var motion: MotionSettings
    /// Seconds of encoded frames kept for synchronized captures (FrameRing); 0: none.
    public var frameRing: Double = 0
    /// The threads every output's work runs on: the application's one pool, shared by every
    /// camera's session (`with(pool:)`). A configuration made without one has a pool of its
    /// own, one thread per core (a session on its own, as in a test).
    public var pool = EncodePool(threads: ProcessInfo.processInfo.activeProcessorCount, name: "encode")

    public init(preset: String = "1280x720", fps: Int = 30, streamQuality: Int = 80,
                captureQuality: Int = 92, readBackInterval: Double = 0.5,
                placeholder: @escaping PlaceholderRenderer = { w, h, _ in [UInt8](repeating: 0x80, count: w * h * 2) },
                movies: MovieStore = MovieStore(directory: "movies"), moviePreset: String = "superfast",
                metadataRate: Double = 10, streamSubsampling: ChromaSubsampling = .s422,
                streamWorkers: Int = 1, live: LiveEncoderSettings = LiveEncoderSettings(),
                motion: MotionSettings = MotionSettings()) {
        self.motion = motion
        self.preset = preset
        self.fps = fps
        self.streamQuality = streamQuality
        self.captureQuality = captureQuality
        self.readBackInterval = readBackInterval
        self.placeholder = placeholder
        self.movies = movies
        self.moviePreset = moviePreset
        self.metadataRate = metadataRate
        self.streamSubsampling = streamSubsampling
        self.streamWorkers = max(1, streamWorkers)
        self.live = live
    }
}

extension LiveEncoderSettings {
    /// The sub stream's defaults (what IP cameras' second stream is: Hikvision's 102, Reolink's `_sub`).
    public static let sub = LiveEncoderSettings(bitrate: 500, width: 640, fps: 15)
}

extension SessionConfiguration {
    public func with(frameRing seconds: Double) -> SessionConfiguration {
        var c = self
        c.frameRing = seconds
        return c
    }

    public func with(sub: LiveEncoderSettings) -> SessionConfiguration {
        var c = self
        c.sub = sub
        return c
    }

    public func with(liveEncoders: LiveEncoderChain) -> SessionConfiguration {
        var c = self
        c.liveEncoders = liveEncoders
        return c
    }

    public func with(pool: EncodePool) -> SessionConfiguration {
        var c = self
        c.pool = pool
        return c
    }
}
