// The encoders a live stream can be made by (issue 38), each one of libavcodec's: for H.264
// the hardware ones a Raspberry Pi (V4L2 memory-to-memory), an Intel or AMD machine (VA-API)
// or an NVIDIA one (NVENC) has, and libx264 in software, which every machine has; and libvpx's
// VP8, for a browser whose WebRTC has no H.264 (Firefox without its OpenH264 download). What
// differs between them is how each is opened: its codec, the pictures it takes, and the
// options that make it a low-latency stream under a cap.

import CFFmpeg

public enum VideoEncoderKind: String, Sendable, CaseIterable, Codable {
    case v4l2m2m, vaapi, nvenc, x264
    /// VP8 (libvpx), realtime.
    case libvpx

    /// libavcodec's encoder.
    public var codecName: String {
        switch self {
        case .v4l2m2m: "h264_v4l2m2m"
        case .vaapi: "h264_vaapi"
        case .nvenc: "h264_nvenc"
        case .x264: "libx264"
        case .libvpx: "libvpx"
        }
    }

    /// An H.264 encoder (`live.encoders` lists these), or VP8's.
    public var isH264: Bool { self != .libvpx }

    /// The H.264 encoders, as `live.encoders` names them.
    public static let h264: [VideoEncoderKind] = allCases.filter(\.isH264)

    /// FF_PROFILE_H264_CONSTRAINED_BASELINE, a macro Swift does not import: Baseline (66) with
    /// FF_PROFILE_H264_CONSTRAINED.
    static let constrainedBaseline = Int32(66 | 1 << 9)

    /// The candidates in the order a machine should try them: hardware first, software last.
    public static let preferred: [VideoEncoderKind] = [.v4l2m2m, .vaapi, .nvenc, .x264]

    /// Whether SPS and PPS come in the extradata at open (libx264's global header, repeated
    /// before every IDR by `repeat-headers`). The hardware encoders put them in band only
    /// (one global header would lose them from the stream): LiveEncoder learns them from the
    /// first IDR, and puts them back before an IDR that lacks them.
    var globalHeader: Bool { self == .x264 }

    /// The options that make it a low-latency stream: no B-frames, no lookahead, an IDR
    /// when asked (`forced-idr`), Main profile (what every browser's offer accepts).
    func configure(_ c: UnsafeMutablePointer<AVCodecContext>, preset: String, crf: Int, profile: H264Profile) throws(MovieError) {
        let options = c.pointee.priv_data
        let main = profile == .main
        switch self {
        case .x264:
            guard av_opt_set(options, "preset", preset, 0) >= 0 else { throw .unsupported("libx264 has no preset '\(preset)'") }
            av_opt_set(options, "tune", "zerolatency", 0)
            av_opt_set(options, "forced-idr", "1", 0)
            // Main profile: what browsers offer for WebRTC (profile-level-id 4d…; Chromium
            // offers no High), with CABAC; High's 8×8 transform is the only thing given up.
            // Baseline (without B-frames, as here: constrained) where a viewer's offer has only it.
            av_opt_set(options, "profile", main ? "main" : "baseline", 0)
            av_opt_set(options, "crf", String(crf), 0)
            // SPS/PPS before every IDR as well as in the extradata.
            av_opt_set(options, "x264-params", "repeat-headers=1", 0)
        case .nvenc:
            av_opt_set(options, "preset", "p1", 0)  // the fastest
            av_opt_set(options, "tune", "ull", 0)  // ultra-low latency
            av_opt_set(options, "zerolatency", "1", 0)
            av_opt_set(options, "rc", "vbr", 0)
            av_opt_set(options, "forced-idr", "1", 0)
            av_opt_set(options, "profile", main ? "main" : "baseline", 0)
        case .vaapi:
            av_opt_set(options, "rc_mode", "VBR", 0)
            c.pointee.profile = main ? FF_PROFILE_H264_MAIN : Self.constrainedBaseline
        case .v4l2m2m:
            c.pointee.profile = main ? FF_PROFILE_H264_MAIN : Self.constrainedBaseline
        case .libvpx:
            // Realtime at its fastest, no frames held back, each partition decodable alone (a
            // lost packet costs its partition, not the frame).
            av_opt_set(options, "deadline", "realtime", 0)
            av_opt_set(options, "cpu-used", "8", 0)
            av_opt_set(options, "lag-in-frames", "0", 0)
            av_opt_set(options, "auto-alt-ref", "0", 0)
            av_opt_set(options, "error-resilient", "partitions", 0)
        }
    }
}
