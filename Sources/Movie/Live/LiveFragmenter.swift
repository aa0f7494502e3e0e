// The live stream as fragmented MP4 for Media Source Extensions (and ffplay, VLC): libavformat's
// MP4 muxer writing into memory — an init segment (ftyp + moov with the avcC) once, then one
// fragment (moof + mdat) per access unit, each a whole box a client can append at once. One
// muxer per encoder, shared by every client: a client gets the init segment, then fragments
// from a keyframe on. One owner: the live output's thread.

import CFFmpeg
import CameraCore

public final class LiveFragmenter {
    /// ftyp and moov: what a client needs before any fragment.
    public private(set) var initSegment: [UInt8] = []
    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var io: UnsafeMutablePointer<AVIOContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private let stream: UnsafeMutablePointer<AVStream>
    private let sink = MemorySink()
    private let frameTicks: Int64

    /// An H.264 track of `width`×`height` whose SPS/PPS are `extradata` (Annex B).
    public init(width: Int, height: Int, fps: Int, extradata: [UInt8]) throws(MovieError) {
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
        } catch {
            close()
            throw error
        }
        s.pointee.avg_frame_rate = AVRational(num: Int32(max(1, fps)), den: 1)
        do throws(MovieError) {
            io = try sink.makeIOContext()
            format!.pointee.pb = io
            try MovieError.check(FragmentedMP4.writeHeader(format), "avformat_write_header")
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

    /// The fragment (moof + mdat) holding `unit` alone.
    public func fragment(_ unit: AccessUnit) throws(MovieError) -> [UInt8] {
        guard let packet else { return [] }
        try MovieError.check(av_new_packet(packet, Int32(unit.bytes.count)), "av_new_packet")
        unit.bytes.withUnsafeBufferPointer { packet.pointee.data.update(from: $0.baseAddress!, count: $0.count) }
        packet.pointee.pts = unit.pts
        packet.pointee.dts = unit.pts
        packet.pointee.duration = frameTicks
        packet.pointee.stream_index = stream.pointee.index
        if unit.keyframe { packet.pointee.flags |= AV_PKT_FLAG_KEY }
        av_packet_rescale_ts(packet, AVRational(num: 1, den: Int32(LiveEncoder.ticksPerSecond)), stream.pointee.time_base)
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
