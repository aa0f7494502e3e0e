// What the ONVIF services ask of the application: the device's identity, its network
// interfaces, its media profiles and each source's PTZ position. The services know no camera or session; the
// application answers in ONVIF's terms (ViewfinderApp/Services/ONVIFService.swift).

/// The scopes every Viewfinder has (GetScopes' Fixed ones, and discovery's).
public enum ONVIFScopes {
    public static let fixed = ["onvif://www.onvif.org/type/video_encoder", "onvif://www.onvif.org/Profile/Streaming",
                               "onvif://www.onvif.org/type/NetworkVideoTransmitter"]
}

public struct DeviceInformation: Sendable, Equatable {
    public var manufacturer, model, firmwareVersion, serialNumber, hardwareId: String
    public init(manufacturer: String, model: String, firmwareVersion: String, serialNumber: String, hardwareId: String) {
        self.manufacturer = manufacturer; self.model = model; self.firmwareVersion = firmwareVersion
        self.serialNumber = serialNumber; self.hardwareId = hardwareId
    }
}

public struct NetworkInterface: Sendable, Equatable {
    public var name: String
    /// "aa:bb:cc:dd:ee:ff".
    public var mac: String
    public var mtu: Int
    /// IPv4 addresses with their prefix lengths.
    public var ipv4: [(address: String, prefixLength: Int)]
    public init(name: String, mac: String, mtu: Int, ipv4: [(address: String, prefixLength: Int)]) {
        self.name = name; self.mac = mac; self.mtu = mtu; self.ipv4 = ipv4
    }
    public static func == (a: Self, b: Self) -> Bool {
        a.name == b.name && a.mac == b.mac && a.mtu == b.mtu && a.ipv4.elementsEqual(b.ipv4) { $0 == $1 }
    }
}

/// How a profile's pictures are encoded, as ONVIF names it.
public enum VideoEncoding: String, Sendable, Equatable {
    case h264 = "H264"
    /// RTP/JPEG (RFC 2435): ONVIF Profile S's mandatory stream.
    case jpeg = "JPEG"
}

/// One stream of one camera, as an ONVIF media profile.
public struct MediaProfile: Sendable, Equatable {
    public var token: String
    public var name: String
    /// The camera (the video source's token).
    public var source: String
    public var width, height, fps: Int
    /// The encoder's cap, kbit/s.
    public var bitrate: Int
    /// Frames between keyframes.
    public var govLength: Int
    /// "Main", "High", "Baseline" (H.264 profiles as ONVIF names them).
    public var h264Profile: String
    public var streamURI: String
    public var snapshotURI: String
    /// The sound its stream carries (AAC), nil for none.
    public var audio: AudioProfile?
    public var encoding: VideoEncoding = .h264
    /// ONVIF's relative Quality (0…10): a JPEG stream's, from its encoder's quality; an H.264
    /// stream's quality follows its bitrate cap, and it reports the middle.
    public var quality = 5

    public init(token: String, name: String, source: String, width: Int, height: Int, fps: Int, bitrate: Int,
                govLength: Int, h264Profile: String, streamURI: String, snapshotURI: String, audio: AudioProfile? = nil) {
        self.token = token; self.name = name; self.source = source; self.width = width; self.height = height
        self.fps = fps; self.bitrate = bitrate; self.govLength = govLength; self.h264Profile = h264Profile
        self.streamURI = streamURI; self.snapshotURI = snapshotURI; self.audio = audio
    }
}

/// A camera's microphone as its profiles carry it: one AAC encode, shared by its streams.
public struct AudioProfile: Sendable, Equatable {
    /// The audio source's token (and its configuration's).
    public var source: String
    public var sampleRate, channels: Int
    /// kbit/s.
    public var bitrate: Int
    public init(source: String, sampleRate: Int, channels: Int, bitrate: Int) {
        self.source = source; self.sampleRate = sampleRate; self.channels = channels; self.bitrate = bitrate
    }

    /// The encoder configuration's token (one AAC encode per microphone).
    public var encoderToken: String { "\(source)_aac" }
}

/// What a profile's stream can be set to (GetVideoEncoderConfigurationOptions): a value
/// outside these is refused before the device is asked.
public struct EncoderOptions: Sendable, Equatable {
    /// Width × height as the stream is sent (turned with the picture).
    public var resolutions: [PictureSize]
    public var fps: ClosedRange<Int>
    /// kbit/s.
    public var bitrate: ClosedRange<Int>
    public var govLength: ClosedRange<Int>
    /// ONVIF's names ("Main", "Baseline").
    public var h264Profiles: [String]
    public var encoding: VideoEncoding
    public var quality: ClosedRange<Int>
    public init(resolutions: [PictureSize], fps: ClosedRange<Int>, bitrate: ClosedRange<Int>, govLength: ClosedRange<Int>, h264Profiles: [String],
                encoding: VideoEncoding = .h264, quality: ClosedRange<Int> = 5...5) {
        self.resolutions = resolutions; self.fps = fps; self.bitrate = bitrate; self.govLength = govLength; self.h264Profiles = h264Profiles
        self.encoding = encoding; self.quality = quality
    }
}

public struct PictureSize: Sendable, Equatable, Hashable {
    public var width, height: Int
    public init(width: Int, height: Int) { self.width = width; self.height = height }
}

/// What SetVideoEncoderConfiguration asks of a profile's stream (each within its options).
public struct EncoderSetting: Sendable, Equatable {
    public var size: PictureSize
    public var fps: Int
    /// kbit/s.
    public var bitrate: Int
    public init(size: PictureSize, fps: Int, bitrate: Int) { self.size = size; self.fps = fps; self.bitrate = bitrate }
}

/// The request's facts the answers depend on.
public struct ONVIFContext: Sendable {
    /// The address the client reached us at (the Host header: "192.168.1.20:8080"), for the
    /// service addresses and stream URIs we give back.
    public var host: String
    public var secure: Bool
    public var remoteAddress: String
    /// Wall-clock seconds since 1970.
    public var now: Double
    /// The pull point a request was sent to (/onvif/subscriptions/<id>), nil at a service's path.
    public var subscription: Int?
    /// What HTTP's own sign-in (Digest or Basic, checked before the message is read) allows
    /// the caller; nil when the request carried none.
    public var signedIn: ONVIFAccess?

    public init(host: String, secure: Bool, remoteAddress: String, now: Double, subscription: Int? = nil, signedIn: ONVIFAccess? = nil) {
        self.host = host; self.secure = secure; self.remoteAddress = remoteAddress; self.now = now
        self.subscription = subscription; self.signedIn = signedIn
    }

    /// "http://host" or "https://host".
    public var base: String { (secure ? "https://" : "http://") + host }

    /// The host without its port ("[::1]" kept bracketed).
    public var hostName: String {
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") { return String(host[...close]) }
        return host.split(separator: ":", maxSplits: 1).first.map(String.init) ?? host
    }
}

import SOAP

public protocol ONVIFDevice: Sendable {
    func information() async -> DeviceInformation
    func hostname() -> String
    /// The interfaces to report: the one the request came in on first.
    func interfaces(_ context: ONVIFContext) -> [NetworkInterface]
    func profiles(_ context: ONVIFContext) async -> [MediaProfile]
    /// What the profile's stream can be set to; nil for an unknown profile.
    func encoderOptions(_ profile: String) async -> EncoderOptions?
    /// Sets the profile's stream to `setting` (already within its options): what the camera
    /// cannot take is the fault to answer, with nothing changed.
    func setEncoder(_ profile: String, _ setting: EncoderSetting) async throws(SOAPFault)
    /// The names, roles ("Administrator", "Operator", "User") of the users who may sign in.
    func users() -> [(name: String, level: String)]
    /// Scope URIs beyond the fixed ones (onvif://www.onvif.org/name/…, hardware/…).
    func scopes() async -> [String]

    // PTZ: each video source's zoom, and its digital pan and tilt (the crop's centre).

    /// Where the source's picture is and which of its parts are still moving; nil for an
    /// unknown source.
    func ptzPosition(_ source: String) async -> (position: PTZPosition, moving: PTZMoving)?
    /// Goes to the position's parts that are given (nil parts stay), ending a continuous move
    /// of those parts; `zoomSpeed` (0…1) ramps the zoom, nil moves it at once. A refusal is
    /// the fault to answer.
    func ptzMove(_ source: String, pan: Double?, tilt: Double?, zoom: Double?, zoomSpeed: Double?) async throws(SOAPFault)
    /// Moves continuously, replacing a continuous move under way, for `timeout` seconds or
    /// until `ptzStop`: pan and tilt at their velocity (-1…1 of the generic velocity space)
    /// and the zoom at its (-1…1, out to in) toward the end of the range; a part at 0 holds
    /// where it is. The device runs the move and its timeout.
    func ptzContinuous(_ source: String, pan: Double, tilt: Double, zoom: Double, timeout: Double) async throws(SOAPFault)
    /// Stops what moves of the parts named (a continuous move, a zoom ramp) where it has got to.
    func ptzStop(_ source: String, panTilt: Bool, zoom: Bool) async throws(SOAPFault)
    /// Half the picture's width and height in the generic pan/tilt space (whose -1…1 is the
    /// whole frame): 1 unzoomed, 1/2 at a 2× crop. What a field-of-view translation of 1 moves.
    func fieldOfView(_ source: String) async -> (width: Double, height: Double)?

    // Imaging: each source's focus, exposure and white balance, as the session has them.

    /// What the source's focus, exposure and white balance are and can be; nil when unknown.
    func imaging(_ source: String) async -> ImagingState?
    /// Changes what `change` names (the rest stays), as the HTTP calls do; a refusal is the
    /// fault to answer, with nothing changed.
    func setImaging(_ source: String, _ change: ImagingChange) async throws(SOAPFault)
}

/// A source's imaging in ONVIF's terms (AUTO or MANUAL each), with what it can be.
public struct ImagingState: Sendable, Equatable {
    public struct Focus: Sendable, Equatable {
        public var auto: Bool
        /// 0…1 (near to far), the lens's position; nil when the camera has no lens control.
        public var position: Double?
        public var modes: [Bool]
        public init(auto: Bool, position: Double?, modes: [Bool]) { self.auto = auto; self.position = position; self.modes = modes }
    }
    public struct Exposure: Sendable, Equatable {
        public var auto: Bool
        /// Microseconds, and the gain (the camera's ISO).
        public var time: Double, gain: Double
        public var timeRange: ClosedRange<Double>?, gainRange: ClosedRange<Double>?
        public var modes: [Bool]
        public init(auto: Bool, time: Double, gain: Double, timeRange: ClosedRange<Double>?, gainRange: ClosedRange<Double>?, modes: [Bool]) {
            self.auto = auto; self.time = time; self.gain = gain; self.timeRange = timeRange; self.gainRange = gainRange; self.modes = modes
        }
    }
    public struct WhiteBalance: Sendable, Equatable {
        public var auto: Bool
        public var modes: [Bool]
        public init(auto: Bool, modes: [Bool]) { self.auto = auto; self.modes = modes }
    }
    public var focus: Focus?
    public var exposure: Exposure?
    public var whiteBalance: WhiteBalance?
    /// The picture adjustments the camera has as controls of its own, in their own units.
    public var adjustments: [ImagingAdjustment: Adjustment]
    public init(focus: Focus?, exposure: Exposure?, whiteBalance: WhiteBalance?, adjustments: [ImagingAdjustment: Adjustment] = [:]) {
        self.focus = focus; self.exposure = exposure; self.whiteBalance = whiteBalance; self.adjustments = adjustments
    }
}

/// ONVIF's picture adjustments that cameras have as controls (V4L2's brightness, saturation,
/// contrast, sharpness and backlight compensation), by their ImagingSettings20 names, in the
/// order the schema has them.
public enum ImagingAdjustment: String, Sendable, CaseIterable, Comparable {
    case backlightCompensation = "BacklightCompensation"
    case brightness = "Brightness"
    case colorSaturation = "ColorSaturation"
    case contrast = "Contrast"
    case sharpness = "Sharpness"

    public static func < (a: Self, b: Self) -> Bool { allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)! }
}

/// An adjustment's value and the range the camera takes (ONVIF lets a device use its own).
public struct Adjustment: Sendable, Equatable {
    public var value: Double
    public var range: ClosedRange<Double>
    public init(value: Double, range: ClosedRange<Double>) { self.value = value; self.range = range }
}

/// What SetImagingSettings or Move asks for; nil parts stay as they are.
public struct ImagingChange: Sendable, Equatable {
    public var focusAuto: Bool?
    public var focusPosition: Double?
    public var exposureAuto: Bool?
    /// Microseconds.
    public var exposureTime: Double?
    public var gain: Double?
    public var whiteBalanceAuto: Bool?
    /// Adjustments to set, each within its range (backlight compensation: 0 is OFF).
    public var adjustments: [ImagingAdjustment: Double]
    public init(focusAuto: Bool? = nil, focusPosition: Double? = nil, exposureAuto: Bool? = nil, exposureTime: Double? = nil,
                gain: Double? = nil, whiteBalanceAuto: Bool? = nil, adjustments: [ImagingAdjustment: Double] = [:]) {
        self.focusAuto = focusAuto; self.focusPosition = focusPosition; self.exposureAuto = exposureAuto
        self.exposureTime = exposureTime; self.gain = gain; self.whiteBalanceAuto = whiteBalanceAuto; self.adjustments = adjustments
    }
}

/// A PTZ position in ONVIF's generic spaces, as the viewer sees the picture.
/// Which of a PTZ node's parts are moving (GetStatus's MoveStatus).
public struct PTZMoving: Sendable, Equatable {
    public var panTilt: Bool, zoom: Bool
    public init(panTilt: Bool, zoom: Bool) { self.panTilt = panTilt; self.zoom = zoom }
}

public struct PTZPosition: Sendable, Equatable {
    /// -1…1: the picture's centre from the frame's left edge to its right (as the picture is
    /// oriented), and from its bottom to its top. 0, 0 is the middle.
    public var pan: Double, tilt: Double
    /// 0…1: the zoom from its least to its most.
    public var zoom: Double
    public init(pan: Double, tilt: Double, zoom: Double) { self.pan = pan; self.tilt = tilt; self.zoom = zoom }
}
