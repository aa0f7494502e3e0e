// The live H.264 encoder of one running camera (issue 27): libx264 through libavcodec, tuned
// for latency — `zerolatency` (no lookahead, each frame out as it goes in), no B-frames, an
// IDR every `keyframeInterval` seconds or at once when asked (a new client starts without
// waiting), SPS and PPS in band before every IDR (RTSP and WebRTC clients join at one) and
// in the extradata too (an MP4 init segment's avcC). Rate control: CRF 23, or a VBV cap at
// `bitrate` kbit/s. One owner: the live output's thread.

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

public struct LiveEncoderSettings: Sendable, Equatable {
    /// Seconds between IDR frames when nobody asks for one sooner.
    public var keyframeInterval: Double
    /// kbit/s the stream stays under (VBV); nil: constant quality (CRF 23).
    public var bitrate: Int?
    /// libx264's preset.
    public var preset: String
    /// Constant quality when there is no `bitrate` (23: libx264's default; the bench sweeps it).
    public var crf: Int

    public init(keyframeInterval: Double = 2, bitrate: Int? = nil, preset: String = "superfast", crf: Int = 23) {
        self.keyframeInterval = keyframeInterval
        self.bitrate = bitrate
        self.preset = preset
        self.crf = crf
    }
}

public final class LiveEncoder {
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

    /// An encoder for `format`'s frames (an odd width or height is cut to even), turned by 90°
    /// or 270° when `transposed` (the encoded picture is then height × width).
    public init(format: VideoFormat, settings: LiveEncoderSettings, transposed: Bool = false) throws(MovieError) {
        Self.quietLibraries
        self.format = format
        self.transposed = transposed
        let (w, h) = (format.width & ~1, format.height & ~1)
        (width, height) = transposed ? (h, w) : (w, h)
        guard width > 0, height > 0 else { throw .unsupported("no picture in \(format.width)x\(format.height)") }
        keyTicks = Int64(max(0.1, settings.keyframeInterval) * Double(Self.ticksPerSecond))
        converter = try PictureConverter(width: w, height: h)
        guard let codec = avcodec_find_encoder_by_name("libx264") else { throw .unsupported("this FFmpeg has no libx264 encoder") }
        guard let c = avcodec_alloc_context3(codec) else { throw .library(call: "avcodec_alloc_context3", code: cff_averror(ENOMEM)) }
        context = c
        let fps = max(1, format.fps)
        c.pointee.width = Int32(width)
        c.pointee.height = Int32(height)
        c.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        c.pointee.time_base = AVRational(num: 1, den: Int32(Self.ticksPerSecond))
        c.pointee.framerate = AVRational(num: Int32(fps), den: 1)
        c.pointee.gop_size = Int32(max(1, Double(fps) * max(0.1, settings.keyframeInterval) * 2))  // IDRs are forced; x264's own GOP is longer
        c.pointee.max_b_frames = 0
        c.pointee.thread_count = Int32(min(2, ProcessInfo.processInfo.activeProcessorCount))
        c.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        if let kbits = settings.bitrate {
            c.pointee.bit_rate = Int64(kbits) * 1000
            c.pointee.rc_max_rate = Int64(kbits) * 1000
            c.pointee.rc_buffer_size = Int32(kbits * 1000)  // a second's worth: VBV
        }
        guard av_opt_set(c.pointee.priv_data, "preset", settings.preset, 0) >= 0 else {
            throw .unsupported("libx264 has no preset '\(settings.preset)'")
        }
        av_opt_set(c.pointee.priv_data, "tune", "zerolatency", 0)
        av_opt_set(c.pointee.priv_data, "forced-idr", "1", 0)
        // Main profile: what browsers offer for WebRTC (profile-level-id 4d…; Chromium offers
        // no High), with CABAC; High's 8×8 transform is the only thing given up.
        av_opt_set(c.pointee.priv_data, "profile", "main", 0)
        if settings.bitrate == nil { av_opt_set(c.pointee.priv_data, "crf", String(settings.crf), 0) }
        // SPS/PPS before every IDR as well as in the extradata.
        av_opt_set(c.pointee.priv_data, "x264-params", "repeat-headers=1", 0)
        try MovieError.check(avcodec_open2(c, codec, nil), "avcodec_open2 libx264")
        guard let p = av_packet_alloc() else { throw .library(call: "av_packet_alloc", code: cff_averror(ENOMEM)) }
        packet = p
    }

    deinit {
        avcodec_free_context(&context)
        av_packet_free(&packet)
    }

    /// SPS and PPS (Annex B), for an MP4 init segment's avcC.
    public var extradata: [UInt8] {
        guard let c = context, let e = c.pointee.extradata, c.pointee.extradata_size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: e, count: Int(c.pointee.extradata_size)))
    }

    /// Encodes one camera frame exposed at `timestamp` (wall-clock seconds) with `zoom`, turned
    /// clockwise by `rotation` and then mirrored (a rotation of 90° or 270° needs an encoder
    /// made `transposed`); an IDR when `keyframe` or when the interval has passed. The access
    /// units it yields (none while the encoder is still filling its pipeline; zerolatency keeps
    /// that to none).
    public func encode(_ frame: borrowing RawFrame, zoom: Double, rotation: Int = 0, mirrored: Bool = false,
                       keyframe: Bool) throws(MovieError) -> [AccessUnit] {
        guard let context, let packet else { return [] }
        guard (rotation == 90 || rotation == 270) == transposed else { throw .unsupported("a rotation of \(rotation)° needs another encoder") }
        var picture = try converter.convert(frame.bytes, format: format, stride: frame.stride, zoom: zoom)
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
        try MovieError.check(avcodec_send_frame(context, picture), "avcodec_send_frame")
        var units: [AccessUnit] = []
        while true {
            let rc = avcodec_receive_packet(context, packet)
            if rc == cff_eagain() || rc == cff_eof() { break }
            try MovieError.check(rc, "avcodec_receive_packet")
            let p = packet.pointee
            units.append(AccessUnit(bytes: Array(UnsafeBufferPointer(start: p.data, count: Int(p.size))), pts: p.pts,
                                    keyframe: p.flags & AV_PKT_FLAG_KEY != 0,
                                    time: first + Double(p.pts) / Double(Self.ticksPerSecond)))
            av_packet_unref(packet)
        }
        return units
    }
}
