// config.json in API.md's shape, decoded strictly: a wrong type, an out-of-range value or an
// unknown key stops start-up with a message naming the key.

import Auth
import CameraCore
import Capture
import Foundation
import HTTPServer
import JSON
import Motion
import Session
import SystemSupport

public struct Configuration: Sendable, Equatable {

    /// `server.listen[]`: a port of its own for one camera, for clients hard-wired to
    /// `http://host:PORT/?action=stream`.
    public struct Listener: Sendable, Equatable {
        public var port: Int
        public var camera: String
        public var host: String?
    }

    public struct TLS: Sendable, Equatable {
        public var certificate: String
        public var key: String
    }

    public struct CameraEntry: Sendable, Equatable {
        public enum Source: String, Sendable { case v4l2, libcamera, synthetic, image }
        public var id: String
        public var source: Source
        public var device: String?
        public var path: String?
        public var position: String?
        /// A Linux LED class device (/sys/class/leds/NAME) used as the torch.
        public var torchLED: String? = nil
        /// Start this camera's own session at launch, with its own preset and fps (else
        /// session.preset and session.fps).
        public var autostart: Bool? = nil
        public var preset: String? = nil
        public var fps: Int? = nil
        /// Codes a synthetic camera's scene shows from the start.
        public var codes: [SceneCode] = []
        /// A synthetic camera draws the machine-readable timecode into its top rows.
        public var timecode: Bool? = nil
        /// A synthetic camera's sensor noise (nil: `synthetic.noise`).
        public var noise: Bool? = nil
        /// This camera's motion settings over the top-level `motion`'s.
        public var motion: MotionChange? = nil
        /// Its microphone (nil: the default for its source — `auto` for V4L2, `synthetic`
        /// for a synthetic camera, none for an image).
        public var audio: AudioSource? = nil
        /// Its speaker for talk-back (nil: the default — `synthetic` for a synthetic camera,
        /// none otherwise): `synthetic` or an ALSA PCM name.
        public var speaker: AudioSource? = nil
    }

    /// A camera's microphone: `auto` (a V4L2 camera's own sound card),
    /// `synthetic`, an ALSA PCM name, or none (`null`).
    public enum AudioSource: Sendable, Equatable {
        case auto, synthetic, none
        case pcm(String)

        /// A camera's microphone when the configuration names none.
        static func defaultMicrophone(for source: CameraEntry.Source?) -> AudioSource {
            switch source {
            case .v4l2, nil: .auto
            case .synthetic: .synthetic
            case .image, .libcamera: .none
            }
        }
    }

    public enum Cameras: Sendable, Equatable {
        /// Every V4L2 capture device, or the synthetic pair when there is none.
        case auto
        /// The synthetic rear and front cameras, whatever hardware exists.
        case synthetic
        case list([CameraEntry])
    }

    public struct Session: Sendable, Equatable {
        public var camera: String?
        public var preset = "1280x720"
        public var fps = 30
        public var autostart = true
    }

    public struct Stream: Sendable, Equatable {
        public var quality = 80
        /// A cap on every viewer's frame rate; nil: the camera's own rate (as µStreamer streams).
        public var maxFps: Int?
        /// The preview's chroma: "422" (as the source) or "420" (smaller frames).
        public var subsampling = ChromaSubsampling.s422
        /// Encode threads per running camera (µStreamer's `--workers`): one per core by default.
        public var workers = Stream.defaultWorkers
        public static let workersRange = 1...32
        public static var defaultWorkers: Int { min(max(1, ProcessInfo.processInfo.activeProcessorCount), 8) }
    }

    public struct Capture: Sendable, Equatable {
        public var quality = 92
        public var directory = "photos"
    }

    /// The movie output.
    public struct Recording: Sendable, Equatable {
        public var directory = "movies"
        /// libx264's preset: chosen on measurement (bench/RESULTS.md, "Recording").
        public var preset = "superfast"
        public static let presets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow"]
    }

    public var server = Server()
    public var cameras = Cameras.auto
    public var session = Session()
    public var stream = Stream()
    public var capture = Capture()
    public var recording = Recording()
    public var metadata = MetadataSettings()
    public var live = LiveSettings()
    public var rtsp = RTSPSettings()
    public var onvif = ONVIFSettings()
    public var webrtc = WebRTCSettings()
    public var synthetic = SyntheticSettings()
    /// The motion output's settings for every camera (`cameras[].motion` overrides them).
    public var motion = MotionSettings()
    /// Retention of movies and photos.
    public var storage = StorageSettings()
    public var state = StateSettings()  // what a user changes at runtime, saved (issue 57)
    /// The broker, Home Assistant discovery and the fleet.
    public var mqtt = MQTTSettings()
    public var auth = AuthSettings()

    public init() {}

    public struct Error: Swift.Error, CustomStringConvertible, Equatable {
        public var description: String
    }

    /// Loads a file; a missing file is an error only when it was named explicitly. One that is
    /// there but cannot be read is always an error (it says why: EACCES, EISDIR): running on
    /// the defaults instead would hide the owner's settings.
    public static func load(path: String, required: Bool) throws(Error) -> Configuration {
        let data: [UInt8]
        do { data = try Sys.readFile(path) } catch {
            if required || error.errno != ENOENT { throw Error(description: "\(path): cannot read the file: \(error)") }
            return Configuration()
        }
        do throws(Error) { return try parse(data) } catch {
            throw Error(description: "\(path): \(error.description)")
        }
    }

    public static func parse(_ bytes: [UInt8]) throws(Error) -> Configuration {
        let value: JSONValue
        do { value = try JSONValue.parse(bytes) } catch {
            throw Error(description: "not valid JSON (\(error))")
        }
        do throws(JSONFieldError) { return try decode(value) } catch {
            throw Error(description: error.description)
        }
    }

    static func decode(_ value: JSONValue) throws(JSONFieldError) -> Configuration {
        var c = Configuration()
        let root = try JSONObjectReader(value)
        try decodeServer(root, into: &c)
        if let cams = root.value("cameras") {
            c.cameras = try decodeCameras(cams)
        }
        if let s = try root.object("session") {
            c.session.camera = try s.string("camera")
            c.session.preset = try s.string("preset") ?? c.session.preset
            c.session.fps = try s.int("fps", in: 1...120) ?? c.session.fps
            c.session.autostart = try s.bool("autostart") ?? c.session.autostart
            try s.finish()
        }
        if let s = try root.object("stream") {
            c.stream.quality = try s.int("quality", in: 1...100) ?? c.stream.quality
            c.stream.maxFps = try s.int("maxFps", in: 1...120) ?? c.stream.maxFps
            if let sub = try s.string("subsampling", allowed: ChromaSubsampling.allCases.map(\.rawValue)) {
                c.stream.subsampling = ChromaSubsampling(rawValue: sub)!
            }
            c.stream.workers = try s.int("workers", in: Stream.workersRange) ?? c.stream.workers
            try s.finish()
        }
        if let s = try root.object("capture") {
            c.capture.quality = try s.int("quality", in: 1...100) ?? c.capture.quality
            c.capture.directory = try s.string("directory") ?? c.capture.directory
            try s.finish()
        }
        if let s = try root.object("metadata") {
            if let rate = try s.double("rate") {
                guard (0.1...60).contains(rate) else { throw JSONFieldError(path: "metadata.rate", problem: "scans a second within 0.1…60") }
                c.metadata.rate = rate
            }
            try s.finish()
        }
        try decodeLive(root, into: &c)
        try decodeSynthetic(root, into: &c)
        try decodeMotion(root, into: &c)
        try decodeMQTT(root, into: &c)
        try decodeState(root, into: &c)
        if let s = try root.object("recording") {
            c.recording.directory = try s.string("directory") ?? c.recording.directory
            if let p = try s.string("preset") {
                guard Recording.presets.contains(p) else {
                    throw JSONFieldError(path: "recording.preset", problem: "unknown libx264 preset '\(p)'; one of \(Recording.presets.joined(separator: ", "))")
                }
                c.recording.preset = p
            }
            try s.finish()
        }
        if let a = root.value("auth") {
            c.auth = try AuthConfiguration.decode(a)
        }
        try root.finish()
        try c.validate()
        return c
    }

    static func decodeCameras(_ v: JSONValue) throws(JSONFieldError) -> Cameras {
        switch v {
        case .string("auto"): return .auto
        case .string("synthetic"): return .synthetic
        case .array(let items):
            guard !items.isEmpty else { throw JSONFieldError(path: "cameras", problem: "the list is empty") }
            var entries: [CameraEntry] = []
            for (i, item) in items.enumerated() {
                let r = try JSONObjectReader(item, path: "cameras[\(i)]")
                guard let id = try r.string("id"), !id.isEmpty else {
                    throw JSONFieldError(path: "cameras[\(i)].id", problem: "required")
                }
                guard let source = try r.string("source", allowed: ["v4l2", "libcamera", "synthetic", "image"]) else {
                    throw JSONFieldError(path: "cameras[\(i)].source", problem: "required (v4l2, libcamera, synthetic or image)")
                }
                let entry = CameraEntry(id: id, source: .init(rawValue: source)!, device: try r.string("device"),
                                        path: try r.string("path"),
                                        position: try r.string("position", allowed: ["front", "rear", "external", "unspecified"]),
                                        torchLED: try r.string("torchLED"), autostart: try r.bool("autostart"),
                                        preset: try r.string("preset"), fps: try r.int("fps", in: 1...240),
                                        codes: try r.value("codes").map { v throws(JSONFieldError) in
                                            try sceneCodes(v, path: "cameras[\(i)].codes")
                                        } ?? [],
                                        timecode: try r.bool("timecode"), noise: try r.bool("noise"),
                                        motion: try r.object("motion").map { o throws(JSONFieldError) in try motionChange(o) },
                                        audio: try audioSource(r, "audio", path: "cameras[\(i)].audio", auto: true),
                                        speaker: try audioSource(r, "speaker", path: "cameras[\(i)].speaker", auto: false))
                if entry.audio == .auto && entry.source != .v4l2 {
                    throw JSONFieldError(path: "cameras[\(i)].audio", problem: "\"auto\" is a V4L2 camera's own microphone; name an ALSA device, \"synthetic\" or null")
                }
                if !entry.codes.isEmpty && entry.source != .synthetic {
                    throw JSONFieldError(path: "cameras[\(i)].codes", problem: "only a synthetic camera's scene shows codes")
                }
                if entry.timecode == true && entry.source != .synthetic {
                    throw JSONFieldError(path: "cameras[\(i)].timecode", problem: "only a synthetic camera draws the timecode")
                }
                if entry.noise != nil && entry.source != .synthetic {
                    throw JSONFieldError(path: "cameras[\(i)].noise", problem: "only a synthetic camera's sensor is simulated")
                }
                if let p = entry.preset, !Self.presets.contains(p) {
                    throw JSONFieldError(path: "cameras[\(i)].preset", problem: "unknown preset '\(p)'")
                }
                if let led = entry.torchLED, led.isEmpty || led.contains("/") || led.hasPrefix(".") {
                    throw JSONFieldError(path: "cameras[\(i)].torchLED", problem: "'\(led)' is not an LED name under /sys/class/leds")
                }
                if entry.source == .image && entry.path == nil {
                    throw JSONFieldError(path: "cameras[\(i)].path", problem: "required for an image camera")
                }
                if entry.source == .v4l2 && entry.device == nil {
                    throw JSONFieldError(path: "cameras[\(i)].device", problem: "required for a v4l2 camera")
                }
                if entry.source == .libcamera && entry.device == nil {
                    throw JSONFieldError(path: "cameras[\(i)].device", problem: "required for a libcamera camera: its id, as `viewfinder cameras` lists it")
                }
                if entries.contains(where: { $0.id == id }) {
                    throw JSONFieldError(path: "cameras[\(i)].id", problem: "'\(id)' is used twice")
                }
                try r.finish()
                entries.append(entry)
            }
            return .list(entries)
        default:
            throw JSONFieldError(path: "cameras", problem: "expected \"auto\", \"synthetic\" or a list of cameras")
        }
    }


    /// `audio` or `speaker`: absent (nil), null (none), "auto" (a microphone only), "synthetic",
    /// or an ALSA PCM name.
    static func audioSource(_ r: JSONObjectReader, _ key: String, path: String, auto: Bool) throws(JSONFieldError) -> AudioSource? {
        guard r.contains(key) else { return nil }
        guard let v = r.value(key) else { return AudioSource.none }
        guard case .string(let name) = v else {
            throw JSONFieldError(path: path, problem: "expected \(auto ? "\"auto\", " : "")\"synthetic\", an ALSA device name or null, found \(v.typeName)")
        }
        switch name {
        case "auto" where auto: return .auto
        case "synthetic": return .synthetic
        case "", "auto":
            throw JSONFieldError(path: path, problem: "'\(name)' is not a device: name an ALSA device (hw:CARD=…,DEV=0, default), \"synthetic\" or null")
        default:
            guard name.allSatisfy({ $0.isASCII && !$0.isWhitespace && !$0.isNewline }) else {
                throw JSONFieldError(path: path, problem: "'\(name)' is not an ALSA device name")
            }
            return .pcm(name)
        }
    }

    /// Cross-field checks, shared by the file and the command-line overrides.
    public func validate() throws(JSONFieldError) {
        var addr = in_addr()
        guard inet_pton(AF_INET, server.host, &addr) == 1 else {
            throw JSONFieldError(path: "server.host", problem: "'\(server.host)' is not an IPv4 address")
        }
        // Secure by default: reachable from other machines means someone must sign in.
        if !server.host.hasPrefix("127.") && auth.mode == .unconfigured {
            throw JSONFieldError(path: "auth", problem: "server.host \(server.host) is reachable from other machines and no users are configured; add one with `viewfinder user add NAME --role operator`, or write \"auth\": \"none\" to serve without authentication")
        }
        if server.allowOrigins.contains("*") && server.allowOrigins.count > 1 {
            throw JSONFieldError(path: "server.allowOrigin", problem: "\"*\" allows every origin; list origins or use \"*\" alone")
        }
        guard Self.presets.contains(session.preset) else {
            throw JSONFieldError(path: "session.preset", problem: "unknown preset '\(session.preset)'")
        }
        if let id = session.camera, case .list(let entries) = cameras, !entries.contains(where: { $0.id == id }) {
            throw JSONFieldError(path: "session.camera", problem: "no camera with id '\(id)'")
        }
        for (i, l) in server.listen.enumerated() {
            if case .list(let entries) = cameras, !entries.contains(where: { $0.id == l.camera }) {
                throw JSONFieldError(path: "server.listen[\(i)].camera", problem: "no camera with id '\(l.camera)'")
            }
            if l.port != 0 && (l.port == server.port || server.listen.prefix(i).contains { $0.port == l.port }) {
                throw JSONFieldError(path: "server.listen[\(i)].port", problem: "\(l.port) is already used")
            }
            let host = l.host ?? server.host
            guard inet_pton(AF_INET, host, &addr) == 1 else {
                throw JSONFieldError(path: "server.listen[\(i)].host", problem: "'\(host)' is not an IPv4 address")
            }
            if !host.hasPrefix("127.") && auth.mode == .unconfigured {
                throw JSONFieldError(path: "auth", problem: "server.listen[\(i)] on \(host) is reachable from other machines and no users are configured; add one with `viewfinder user add NAME --role operator`, or write \"auth\": \"none\"")
            }
        }
        try validateLive()
    }

    static let presets = ["photo", "high", "medium", "low", "352x288", "640x480", "1280x720", "1920x1080", "3840x2160"]
}
