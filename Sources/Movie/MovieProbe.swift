// What a movie file holds, read back by libavformat: codec, size, rotation, frames and
// duration. Used for movies repaired at start-up (and any whose record is missing).

import CFFmpeg

enum MovieProbe {
    struct Facts: Equatable {
        var codec: MovieCodec
        var width: Int
        var height: Int
        var rotation: Int
        var frames: Int
        var duration: Double
        var audio: MovieAudio?
    }

    static func probe(_ path: String) throws(MovieError) -> Facts {
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        try MovieError.check(avformat_open_input(&ctx, path, nil, nil), "avformat_open_input \(path)")
        defer { avformat_close_input(&ctx) }
        try MovieError.check(avformat_find_stream_info(ctx, nil), "avformat_find_stream_info")
        let index = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        try MovieError.check(index, "av_find_best_stream")
        let stream = ctx!.pointee.streams[Int(index)]!
        let par = stream.pointee.codecpar!.pointee
        let codec: MovieCodec
        switch par.codec_id {
        case AV_CODEC_ID_H264: codec = .h264
        case AV_CODEC_ID_MJPEG: codec = .mjpeg
        default: throw .unsupported("not a Viewfinder movie: codec \(par.codec_id.rawValue)")
        }
        var rotation = 0
        if let m = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, nil) {
            let angle = av_display_rotation_get(UnsafeRawPointer(m).assumingMemoryBound(to: Int32.self))
            if angle.isFinite { rotation = ((Int((-angle).rounded()) % 360) + 360) % 360 }
        }
        var audio: MovieAudio?
        let audioIndex = av_find_best_stream(ctx, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        if audioIndex >= 0, let a = ctx!.pointee.streams[Int(audioIndex)]?.pointee.codecpar?.pointee, a.codec_id == AV_CODEC_ID_AAC {
            audio = MovieAudio(codec: "aac", sampleRate: Int(a.sample_rate), channels: Int(a.ch_layout.nb_channels))
        }
        // Count the packets: the fragments' sample tables are the truth, not any header.
        guard let packet = av_packet_alloc() else { throw .library(call: "av_packet_alloc", code: cff_averror(ENOMEM)) }
        var p: UnsafeMutablePointer<AVPacket>? = packet
        defer { av_packet_free(&p) }
        var frames = 0
        var first = Int64.max, end = Int64.min
        while av_read_frame(ctx, packet) >= 0 {
            if packet.pointee.stream_index == index {
                frames += 1
                let pts = packet.pointee.pts != cff_nopts() ? packet.pointee.pts : packet.pointee.dts
                first = min(first, pts)
                end = max(end, pts + max(packet.pointee.duration, 0))
            }
            av_packet_unref(packet)
        }
        let tb = stream.pointee.time_base
        let duration = frames > 0 ? Double(end - first) * Double(tb.num) / Double(tb.den) : 0
        return Facts(codec: codec, width: Int(par.width), height: Int(par.height), rotation: rotation,
                     frames: frames, duration: duration, audio: audio)
    }
}
