// The live H.264 encoder of one running camera (issue 27): one of libavcodec's H.264 encoders
// (issue 38: libx264, or the machine's hardware one — VideoEncoderKind), tuned for latency —
// no lookahead, each frame out as it goes in, no B-frames, an IDR every `keyframeInterval`
// seconds or at once when asked (a new client starts without waiting), SPS and PPS in band
// before every IDR (RTSP and WebRTC clients join at one) and as the extradata (an MP4 init
// segment's avcC). Rate control: libx264 keeps constant quality (CRF 23) under a VBV cap —
// `bitrate` kbit/s at most, a buffer of half a second, so a keyframe never holds a link at
// that rate for longer — as IP cameras' "VBR with a maximum" does: a still scene costs less,
// a busy one never more; a hardware encoder runs VBR at the cap. The cap can move while the
// stream runs (libavcodec reconfigures x264 between frames: no new stream, no keyframe). A
// size of its own (the sub stream) is scaled on the conversion. One owner: the live output's
// thread.

import CFFmpeg
import CameraCore
import Foundation

/// One encoded frame of the live stream: Annex B NAL units, its time in 90 kHz ticks.
public struct AccessUnit: Sendable {
    public let bytes: [UInt8]
    public let pts: Int64
    public let keyframe: Bool
    /// The frame's capture time, Unix seconds (what a motion event's pre-roll is measured in).
    public let time: Double
}

/// What a live output asks of its encoder: libavcodec's (LiveEncoder), or a test's stand-in
/// for a device that fails mid-stream.
public protocol LiveVideoEncoding: AnyObject {
    /// libavcodec's name for it (`libx264`, `h264_v4l2m2m`...).
    var name: String { get }
    var width: Int { get }
    var height: Int { get }
    var transposed: Bool { get }
    var fps: Int { get }
    var bitrate: Int { get }
    /// SPS and PPS (Annex B); empty until the encoder has said them (a hardware one, at its first IDR).
    var extradata: [UInt8] { get }
    /// The capture time its pts count from (nil before its first frame): a successor started
    /// from it goes on with the same timeline.
    var origin: Double? { get }
    /// Whether a client can be told what the stream is: H.264 once its SPS and PPS are known
    /// (`extradata`), VP8 at once (each keyframe says its size).
    var describable: Bool { get }
    /// The H.264 profile it encodes in.
    var profile: H264Profile { get }
    func setBitrate(_ kbits: Int)
    func encode(_ frame: borrowing RawFrame, transform: FrameTransform, keyframe: Bool) throws(MovieError) -> [AccessUnit]
}

/// The H.264 profile a stream is encoded in.
public enum H264Profile: String, Sendable, Equatable, Codable {
    /// Main: CABAC, what Chromium offers for WebRTC and every player and NVR decodes.
    case main
    /// Constrained Baseline (no CABAC): what Firefox's OpenH264 and some WebKit offers accept alone.
    case constrainedBaseline
}

public struct LiveEncoderSettings: Sendable, Equatable {
    /// Seconds between IDR frames when nobody asks for one sooner.
    public var keyframeInterval: Double
    /// kbit/s the stream stays under (VBV); nil: what IP cameras ship at the stream's size and
    /// rate (`defaultBitrate`).
    public var bitrate: Int?
    /// libx264's preset.
    public var preset: String
    /// The quality the stream has while it stays under the cap (23: libx264's default).
    public var crf: Int
    /// The encoded picture's size before any turn; nil: the camera's. Given one of the two,
    /// the other follows the camera's aspect; never larger than the camera's.
    public var width: Int?
    public var height: Int?
    /// Frames a second at most; nil: every frame the camera gives.
    public var fps: Int?
    /// H.264's profile (VP8 has none).
    public var profile: H264Profile = .main
    /// A sub stream's main stream (`under(_:)`): the sub stream is at most half its width and
    /// height, so a camera never offers two streams of one size (an NVR that finds two profiles
    /// enables both and shows the camera twice); nil: a stream bounded by the camera alone.
    public var main: MainSize?

    /// The size a main stream was asked for (nil: the camera's).
    public struct MainSize: Sendable, Equatable {
        public var width: Int?, height: Int?
    }

    public init(keyframeInterval: Double = 2, bitrate: Int? = nil, preset: String = "superfast", crf: Int = 23,
                width: Int? = nil, height: Int? = nil, fps: Int? = nil) {
        self.keyframeInterval = keyframeInterval
        self.bitrate = bitrate
        self.preset = preset
        self.crf = crf
        self.width = width
        self.height = height
        self.fps = fps
    }

    /// These settings as the sub stream of `main`: at most half its size.
    public func under(_ main: LiveEncoderSettings) -> LiveEncoderSettings {
        var s = self
        s.main = MainSize(width: main.width, height: main.height)
        return s
    }

    /// The size this stream encodes a camera's `width`×`height` at (even numbers, unturned).
    public func size(ofCamera width: Int, _ height: Int) -> (width: Int, height: Int) {
        if let main {  // a sub stream: sized as if the camera were half its main stream
            let m = LiveEncoderSettings(width: main.width, height: main.height).size(ofCamera: width, height)
            var alone = self
            alone.main = nil
            return alone.size(ofCamera: m.width / 2, m.height / 2)
        }
        let (cw, ch) = (max(2, width & ~1), max(2, height & ~1))
        let aspect = Double(cw) / Double(ch)
        var (w, h): (Int, Int)
        switch (self.width, self.height) {  // never larger than the camera
        case let (w0?, h0?):
            let f = min(1, Double(cw) / Double(w0), Double(ch) / Double(h0))  // scaled down to fit, its aspect kept
            (w, h) = (Int((Double(w0) * f).rounded()), Int((Double(h0) * f).rounded()))
        case let (w0?, nil): (w, h) = (min(w0, cw), Int((Double(min(w0, cw)) / aspect).rounded()))
        case let (nil, h0?): (w, h) = (Int((Double(min(h0, ch)) * aspect).rounded()), min(h0, ch))
        case (nil, nil): return (cw, ch)
        }
        return (max(2, w & ~1), max(2, h & ~1))
    }

    /// The frame rate this stream runs at from a camera's `fps`.
    public func rate(ofCamera fps: Int) -> Int { max(1, min(fps, self.fps ?? fps)) }

    /// The cap, in kbit/s, for a stream of `width`×`height` at `fps`: `bitrate`, or the default.
    public func cap(width: Int, height: Int, fps: Int) -> Int {
        bitrate ?? Self.defaultBitrate(width: width, height: height, fps: fps)
    }

    /// What IP cameras ship at a size and rate: 4 Mbit/s at 1080p30, scaled by the pixels to
    /// the power 0.75 and the frame rate to the power 0.5 (a bigger or faster picture costs
    /// less a pixel: 2.2 Mbit/s at 720p30, 500 kbit/s at 640x360@15, 11 Mbit/s at 4K30), to
    /// the nearest 100 kbit/s and at least 200.
    public static func defaultBitrate(width: Int, height: Int, fps: Int) -> Int {
        let pixels = Double(width * height) / (1920 * 1080)
        let kbits = 4000 * pow(pixels, 0.75) * pow(Double(max(1, fps)) / 30, 0.5)
        return max(200, Int((kbits / 100).rounded()) * 100)
    }
}

public final class LiveEncoder: LiveVideoEncoding {
    private static let quietLibraries: Void = { av_log_set_level(AV_LOG_ERROR) }()

    public static let ticksPerSecond: Int64 = 90_000
    public let width: Int
    public let height: Int
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private let converter: PictureConverter
    /// Set when the picture turns (a rotation or a mirror): the converter's picture is turned into it.
    private var rotator: PictureRotator?
    /// Whether the encoded picture is the camera's turned by 90° or 270° (width and height swap).
    public let transposed: Bool
    private let format: VideoFormat
    private let keyTicks: Int64
    private var lastKeyPts: Int64 = .min
    private var lastPts: Int64 = -1
    private var firstTimestamp: Double?
    public var origin: Double? { firstTimestamp }
    public let kind: VideoEncoderKind
    public var name: String { kind.codecName }
    public var describable: Bool { !kind.isH264 || !extradata.isEmpty }
    public private(set) var profile: H264Profile = .main
    /// A hardware encoder's SPS and PPS, from its first IDR.
    private var parameterSets = ParameterSets()
    /// VA-API's surfaces (nil for every other encoder: they take the converted picture).
    private var upload: HardwareUpload?
    /// The VBV cap now, kbit/s.
    public private(set) var bitrate: Int
    /// The stream's frame rate (the camera's, or less: `settings.fps`).
    public let fps: Int

    /// An encoder of `kind` for `format`'s frames at `settings`' size (an odd width or height
    /// is cut to even), turned by 90° or 270° when `transposed` (the encoded picture is then
    /// height × width). Its pts count from `origin` (a capture time) when given — a successor
    /// goes on with its predecessor's timeline — else from its first frame.
    public init(format: VideoFormat, settings: LiveEncoderSettings, transposed: Bool = false, kind: VideoEncoderKind = .x264,
                origin: Double? = nil) throws(MovieError) {
        Self.quietLibraries
        self.kind = kind
        firstTimestamp = origin
        self.format = format
        self.transposed = transposed
        let (w, h) = settings.size(ofCamera: format.width, format.height)
        (width, height) = transposed ? (h, w) : (w, h)
        fps = settings.rate(ofCamera: max(1, format.fps))
        bitrate = settings.cap(width: w, height: h, fps: fps)
        guard width > 0, height > 0 else { throw .unsupported("no picture in \(format.width)x\(format.height)") }
        keyTicks = Int64(max(0.1, settings.keyframeInterval) * Double(Self.ticksPerSecond))
        converter = try PictureConverter(width: w, height: h)
        guard let codec = avcodec_find_encoder_by_name(kind.codecName) else { throw .unsupported("this FFmpeg has no \(kind.codecName) encoder") }
        guard let c = avcodec_alloc_context3(codec) else { throw .library(call: "avcodec_alloc_context3", code: cff_averror(ENOMEM)) }
        context = c
        c.pointee.width = Int32(width)
        c.pointee.height = Int32(height)
        c.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        c.pointee.time_base = AVRational(num: 1, den: Int32(Self.ticksPerSecond))
        c.pointee.framerate = AVRational(num: Int32(fps), den: 1)
        c.pointee.gop_size = Int32(max(1, Double(fps) * max(0.1, settings.keyframeInterval) * 2))  // IDRs are forced; the encoder's own GOP is longer
        c.pointee.max_b_frames = 0
        if kind == .x264 || kind == .libvpx { c.pointee.thread_count = Int32(min(2, ProcessInfo.processInfo.activeProcessorCount)) }
        if kind.globalHeader { c.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        if kind == .vaapi {
            let u = try HardwareUpload(width: width, height: height)
            upload = u
            c.pointee.pix_fmt = AV_PIX_FMT_VAAPI
            c.pointee.hw_frames_ctx = av_buffer_ref(u.frames)
        }
        Self.cap(c, bitrate)
        try kind.configure(c, preset: settings.preset, crf: settings.crf, profile: settings.profile)
        self.profile = settings.profile
        try MovieError.check(avcodec_open2(c, codec, nil), "avcodec_open2 \(kind.codecName)")
        guard let p = av_packet_alloc() else { throw .library(call: "av_packet_alloc", code: cff_averror(ENOMEM)) }
        packet = p
    }

    /// VBV: at most `kbits` kbit/s, half a second of it buffered (a keyframe's burst at most).
    private static func cap(_ c: UnsafeMutablePointer<AVCodecContext>, _ kbits: Int) {
        c.pointee.bit_rate = Int64(kbits) * 1000  // (CRF rules; libavcodec checks it against the cap)
        c.pointee.rc_max_rate = Int64(kbits) * 1000
        c.pointee.rc_buffer_size = Int32(kbits * 500)
    }

    /// Moves the cap; libavcodec reconfigures x264 before the next frame (same stream, no IDR).
    public func setBitrate(_ kbits: Int) {
        guard kbits != bitrate, let context else { return }
        bitrate = kbits
        Self.cap(context, kbits)
    }

    deinit {
        avcodec_free_context(&context)
        av_packet_free(&packet)
    }

    /// SPS and PPS (Annex B), for an MP4 init segment's avcC: libx264's global header, a
    /// hardware encoder's from its first IDR (empty before it).
    public var extradata: [UInt8] {
        guard kind.globalHeader else { return parameterSets.annexB }
        guard let c = context, let e = c.pointee.extradata, c.pointee.extradata_size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: e, count: Int(c.pointee.extradata_size)))
    }

    /// Encodes one camera frame exposed at `timestamp` (wall-clock seconds) with the
    /// transform's zoom (about its centre), turned clockwise by its rotation and then mirrored
    /// (a rotation of 90° or 270° needs an encoder made `transposed`); an IDR when `keyframe` or
    /// when the interval has passed. The access units it yields (none while the encoder is
    /// still filling its pipeline; zerolatency keeps that to none).
    public func encode(_ frame: borrowing RawFrame, transform: FrameTransform = .identity,
                       keyframe: Bool) throws(MovieError) -> [AccessUnit] {
        guard let context, let packet else { return [] }
        let rotation = transform.rotation, mirrored = transform.mirrored
        guard (rotation == 90 || rotation == 270) == transposed else { throw .unsupported("a rotation of \(rotation)° needs another encoder") }
        var picture = try converter.convert(frame.bytes, format: format, stride: frame.stride, zoom: transform.zoom, center: transform.center)
        if rotation != 0 || mirrored {
            if rotator == nil { rotator = try PictureRotator(width: width, height: height) }
            picture = try rotator!.turn(picture, rotation: rotation, mirrored: mirrored)
        }
        let first = firstTimestamp ?? frame.timestamp
        firstTimestamp = first
        var pts = Int64(((frame.timestamp - first) * Double(Self.ticksPerSecond)).rounded())
        pts = max(pts, lastPts + 1)  // a clock step back never reorders the stream
        lastPts = pts
        let due = keyframe || lastKeyPts == .min || pts - lastKeyPts >= keyTicks
        if due { lastKeyPts = pts }
        picture.pointee.pts = pts
        picture.pointee.pict_type = due ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        try MovieError.check(avcodec_send_frame(context, try upload?.upload(picture) ?? picture), "avcodec_send_frame \(name)")
        var units: [AccessUnit] = []
        while true {
            let rc = avcodec_receive_packet(context, packet)
            if rc == cff_eagain() || rc == cff_eof() { break }
            try MovieError.check(rc, "avcodec_receive_packet \(name)")
            let p = packet.pointee
            let key = p.flags & AV_PKT_FLAG_KEY != 0
            var bytes = Array(UnsafeBufferPointer(start: p.data, count: Int(p.size)))
            if key && kind.isH264 && !kind.globalHeader { bytes = parameterSets.keyframe(bytes) }
            units.append(AccessUnit(bytes: bytes, pts: p.pts, keyframe: key,
                                    time: first + Double(p.pts) / Double(Self.ticksPerSecond)))
            av_packet_unref(packet)
        }
        return units
    }
}
