// The live stream as fragmented MP4 for Media Source Extensions (and ffplay, VLC): libavformat's
// MP4 muxer writing into memory — an init segment (ftyp + moov with the avcC) once, then one
// fragment (moof + mdat) per access unit, each a whole box a client can append at once. One
// muxer per live.mp4 client (its times count from that client's first keyframe), fed the
// shared encoder's units and, with sound, the camera's shared AAC packets: muxing is boxing,
// the encodes stay one per stream.
// One owner: the live output's thread, or the client's pump.

import CFFmpeg
import CameraCore

public final class LiveFragmenter {
    /// ftyp and moov: what a client needs before any fragment.
    public private(set) var initSegment: [UInt8] = []
    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var io: UnsafeMutablePointer<AVIOContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private let stream: UnsafeMutablePointer<AVStream>
    private var audioStream: UnsafeMutablePointer<AVStream>?
    private let sink = MemorySink()
    private let frameTicks: Int64

    /// An H.264 track of `width`×`height` whose SPS/PPS are `extradata` (Annex B), and an AAC
    /// track when `audio` describes one.
    ///
    /// With sound every fragment is placed at its own time (`frag_discont`, no edit list): the
    /// muxer otherwise makes each fragment start where the last one ended, so a frame the busy
    /// encoder skipped, or a gap in the sound, would shift that track against the other for
    /// good. Picture alone keeps the contiguous timeline players have always been given.
    public init(width: Int, height: Int, fps: Int, extradata: [UInt8], audio: AudioTrackInfo? = nil) throws(MovieError) {
        frameTicks = LiveEncoder.ticksPerSecond / Int64(max(1, fps))
        var fmt: UnsafeMutablePointer<AVFormatContext>?
        try MovieError.check(avformat_alloc_output_context2(&fmt, nil, "mp4", nil), "avformat_alloc_output_context2")
        format = fmt
        guard let s = avformat_new_stream(fmt, nil) else {
            avformat_free_context(fmt)
            format = nil
            throw .library(call: "avformat_new_stream", code: cff_averror(ENOMEM))
        }
        stream = s
        s.pointee.time_base = AVRational(num: 1, den: Int32(LiveEncoder.ticksPerSecond))
        do throws(MovieError) {
            try FragmentedMP4.describeH264(s.pointee.codecpar!, width: width, height: height, extradata: extradata)
            s.pointee.avg_frame_rate = AVRational(num: Int32(max(1, fps)), den: 1)
            if let audio {
                guard let a = avformat_new_stream(fmt, nil) else { throw .library(call: "avformat_new_stream", code: cff_averror(ENOMEM)) }
                audioStream = a
                a.pointee.time_base = AVRational(num: 1, den: Int32(audio.sampleRate))
                try FragmentedMP4.describeAudio(a.pointee.codecpar!, audio)
                fmt!.pointee.avoid_negative_ts = 0  // AVFMT_AVOID_NEG_TS_DISABLED: times as given
            }
            io = try sink.makeIOContext()
            format!.pointee.pb = io
            try MovieError.check(FragmentedMP4.writeHeader(format, placed: audio != nil), "avformat_write_header")
            avio_flush(io)
            initSegment = sink.take()
            guard let p = av_packet_alloc() else { throw .library(call: "av_packet_alloc", code: cff_averror(ENOMEM)) }
            packet = p
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// The fragment (moof + mdat) holding `unit` alone, at `pts` (90 kHz; the encoder's by default).
    public func fragment(_ unit: AccessUnit, pts: Int64? = nil) throws(MovieError) -> [UInt8] {
        guard let packet else { return [] }
        try MovieError.check(av_new_packet(packet, Int32(unit.bytes.count)), "av_new_packet")
        unit.bytes.withUnsafeBufferPointer { packet.pointee.data.update(from: $0.baseAddress!, count: $0.count) }
        packet.pointee.pts = pts ?? unit.pts
        packet.pointee.dts = pts ?? unit.pts
        packet.pointee.duration = frameTicks
        packet.pointee.stream_index = stream.pointee.index
        if unit.keyframe { packet.pointee.flags |= AV_PKT_FLAG_KEY }
        av_packet_rescale_ts(packet, AVRational(num: 1, den: Int32(LiveEncoder.ticksPerSecond)), stream.pointee.time_base)
        return try write(packet)
    }

    /// The fragment holding one AAC packet at `pts` (in samples); empty for a picture-only stream.
    public func fragment(audio: AudioPacket, pts: Int64) throws(MovieError) -> [UInt8] {
        guard let packet, let a = audioStream else { return [] }
        try FragmentedMP4.load(packet, audio, pts: pts, stream: a)
        return try write(packet)
    }

    private func write(_ packet: UnsafeMutablePointer<AVPacket>) throws(MovieError) -> [UInt8] {
        if audioStream != nil {
            // This fragment starts at its packet's own time (the muxer clears the flag once used).
            _ = av_opt_set(format!.pointee.priv_data, "movflags", "+frag_discont", 0)
        }
        let rc = av_write_frame(format, packet)
        av_packet_unref(packet)
        try MovieError.check(rc, "av_write_frame")
        try MovieError.check(av_write_frame(format, nil), "av_write_frame (fragment)")
        avio_flush(io)
        return sink.take()
    }

    private func close() {
        av_packet_free(&packet)
        FragmentedMP4.release(format: &format, io: &io)
    }
}

/// The muxer's output, gathered in memory until taken.
private final class MemorySink: MuxerSink {
    private var bytes: [UInt8] = []

    func take() -> [UInt8] {
        defer { bytes = [] }
        return bytes
    }

    func write(_ buffer: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
        bytes.append(contentsOf: UnsafeBufferPointer(start: buffer, count: count))
        return Int32(count)
    }
}
