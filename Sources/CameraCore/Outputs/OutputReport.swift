// What the state says of an output (issue 36): the capture graph as go2rtc's stream list
// shows producers and consumers, so "why is my CPU at 80 %" has an answer — which outputs
// work, for how many clients of which kind, how many frames they took and dropped, and what
// a frame costs them.

/// The kinds of output a camera's session has (AVCaptureOutput's subclasses, in spirit).
public enum OutputKind: String, Sendable, Codable, CaseIterable {
    case preview, photo, live
    /// The sub stream: a smaller, slower live encode for grids, detectors and slow links.
    case liveSub
    /// The main stream in VP8, while a WebRTC viewer without H.264 watches.
    case liveVP8
    case motion, metadata, ring, movie
    /// The audio data output (AVCaptureAudioDataOutput): live PCM (`audio.wav`) and the level meter.
    case audio
}

/// What a session's input is.
public enum MediaType: String, Sendable, Codable {
    case video, audio
}

/// One input of a session: the device and what it gives.
public struct InputReport: Sendable, Equatable, Codable {
    public var device: String
    public var mediaType: MediaType

    public init(device: String, mediaType: MediaType) {
        self.device = device
        self.mediaType = mediaType
    }
}

/// One WebRTC viewer of a live stream and what its receiver reports say of its link.
public struct ViewerReport: Sendable, Equatable, Codable {
    /// The WHEP session's id (its Location's last part).
    public var id: String
    /// Whether its stream follows its link (a viewer that asked for one stream keeps it).
    public var adaptive: Bool
    /// The picture's send rate, kbit/s, over the last second.
    public var sendKbps: Double
    /// The last receiver report's fraction lost (0…1) and round trip (ms).
    public var fractionLost: Double
    public var roundTripMs: Double
    /// The way its packets take: the ICE pair selected (nil before one is).
    public var path: ICEPath?

    public init(id: String, adaptive: Bool, sendKbps: Double, fractionLost: Double, roundTripMs: Double, path: ICEPath? = nil) {
        self.id = id
        self.adaptive = adaptive
        self.sendKbps = sendKbps
        self.fractionLost = fractionLost
        self.roundTripMs = roundTripMs
        self.path = path
    }
}

/// A WebRTC viewer's selected ICE pair, by its ends' kinds: "why is this viewer relayed" has an
/// answer. No addresses: the state is a viewer's to read, and another viewer's address is not.
public struct ICEPath: Sendable, Equatable, Codable {
    /// The server's end and the viewer's: "host", "srflx", "prflx" or "relay".
    public var local: String
    public var remote: String
    /// "udp" or "tcp" (ICE-TCP) between them.
    public var `protocol`: String
    /// How the relay is reached where an end is relayed: "udp", "tcp" or "tls".
    public var relayProtocol: String?

    public init(local: String, remote: String, protocol: String, relayProtocol: String? = nil) {
        self.local = local
        self.remote = remote
        self.protocol = `protocol`
        self.relayProtocol = relayProtocol
    }
}

/// One output of a session, as the state reports it.
public struct OutputReport: Sendable, Equatable, Codable {
    public var type: OutputKind
    /// Doing work now: someone watches, a request is due, it records, it detects or scans.
    public var active: Bool
    /// Who it works for, by transport (`mjpeg`, `webrtc`, `rtsp`, `mp4`, `sse`, `mqtt`…).
    public var clients: [String: Int]
    /// Frames it took since the camera started, and of those the ones it dropped (replaced by
    /// a newer frame while its slots were busy, or refused by a full queue).
    public var framesIn: UInt64
    public var framesDropped: UInt64
    /// Milliseconds of work a frame costs it (a moving average over the last frames).
    public var msPerFrame: Double
    /// A live stream's WebRTC viewers with what their links report (absent for other outputs).
    public var viewers: [ViewerReport]?

    public init(type: OutputKind, active: Bool, clients: [String: Int] = [:], framesIn: UInt64 = 0,
                framesDropped: UInt64 = 0, msPerFrame: Double = 0) {
        self.type = type
        self.active = active
        self.clients = clients
        self.framesIn = framesIn
        self.framesDropped = framesDropped
        self.msPerFrame = msPerFrame
    }

    /// An output's figures from its hand-off.
    public init(type: OutputKind, active: Bool, figures f: HandoffFigures, clients: [String: Int] = [:]) {
        self.init(type: type, active: active, clients: clients, framesIn: f.taken, framesDropped: f.dropped,
                  msPerFrame: (f.msPerFrame * 100).rounded() / 100)
    }
}

/// A connection of the graph (AVCaptureConnection): which input feeds which output, with what
/// media, and whether it is enabled (a disabled connection's output gets nothing of its input).
public struct CaptureConnection: Sendable, Equatable, Codable {
    public var input: String
    public var output: OutputKind
    public var mediaType: MediaType
    public var enabled: Bool

    public init(input: String, output: OutputKind, mediaType: MediaType, enabled: Bool) {
        self.input = input
        self.output = output
        self.mediaType = mediaType
        self.enabled = enabled
    }
}
