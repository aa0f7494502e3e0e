// Where libavformat's MP4 muxer writes, and how a fragmented MP4 starts: the movie file
// (FileSink) and the live stream's memory (LiveFragmenter) share both, so the two MP4s are
// laid out alike — fragments only when cut, an empty moov up front, each moof its own base.

import CFFmpeg

protocol MuxerSink: AnyObject {
    /// Takes `count` bytes of the muxer's output; answers `count`, or an AVERROR.
    func write(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32
}

extension MuxerSink {
    /// The AVIOContext that writes here. Not seekable: the muxer appends only, which is what
    /// keeps a cut-off file readable up to its last fragment and lets a stream be sent as made.
    func makeIOContext() throws(MovieError) -> UnsafeMutablePointer<AVIOContext> {
        let size: Int32 = 64 * 1024
        guard let buffer = av_malloc(Int(size))?.assumingMemoryBound(to: UInt8.self) else {
            throw .library(call: "av_malloc", code: cff_averror(ENOMEM))
        }
        let opaque = Unmanaged.passUnretained(self as AnyObject).toOpaque()
        guard let io = avio_alloc_context(buffer, size, 1, opaque, nil, { opaque, buf, size in
            guard let opaque, let buf, size > 0 else { return 0 }
            // The sink outlives its context: its owner frees the context first.
            return (Unmanaged<AnyObject>.fromOpaque(opaque).takeUnretainedValue() as! any MuxerSink).write(buf, Int(size))
        }, nil) else {
            av_free(buffer)
            throw .library(call: "avio_alloc_context", code: cff_averror(ENOMEM))
        }
        io.pointee.seekable = 0
        return io
    }
}

enum FragmentedMP4 {
    /// An H.264 track's parameters for H.264 encoded elsewhere: its size and its SPS and PPS
    /// (Annex B; the MP4 muxer writes the avcC from them and makes each packet length-prefixed).
    static func describeH264(_ par: UnsafeMutablePointer<AVCodecParameters>, width: Int, height: Int,
                             extradata: [UInt8]) throws(MovieError) {
        par.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        par.pointee.codec_id = AV_CODEC_ID_H264
        par.pointee.width = Int32(width)
        par.pointee.height = Int32(height)
        guard !extradata.isEmpty else { return }
        guard let e = av_mallocz(extradata.count + Int(AV_INPUT_BUFFER_PADDING_SIZE))?.assumingMemoryBound(to: UInt8.self) else {
            throw .library(call: "av_mallocz", code: cff_averror(ENOMEM))
        }
        e.update(from: extradata, count: extradata.count)
        par.pointee.extradata = e  // the stream frees it
        par.pointee.extradata_size = Int32(extradata.count)
    }

    /// A sound track's parameters for packets encoded elsewhere (AAC: its AudioSpecificConfig
    /// becomes the esds).
    static func describeAudio(_ par: UnsafeMutablePointer<AVCodecParameters>, _ info: AudioTrackInfo) throws(MovieError) {
        par.pointee.codec_type = AVMEDIA_TYPE_AUDIO
        par.pointee.codec_id = AV_CODEC_ID_AAC
        par.pointee.sample_rate = Int32(info.sampleRate)
        av_channel_layout_default(&par.pointee.ch_layout, Int32(info.channels))
        par.pointee.bit_rate = Int64(info.bitrate)
        par.pointee.frame_size = 1024
        guard !info.extradata.isEmpty else { return }
        guard let e = av_mallocz(info.extradata.count + Int(AV_INPUT_BUFFER_PADDING_SIZE))?.assumingMemoryBound(to: UInt8.self) else {
            throw .library(call: "av_mallocz", code: cff_averror(ENOMEM))
        }
        e.update(from: info.extradata, count: info.extradata.count)
        par.pointee.extradata = e  // the stream frees it
        par.pointee.extradata_size = Int32(info.extradata.count)
    }

    /// `p` holds a copy of the AAC packet `audio` for `stream`, at `pts` (in samples): a
    /// keyframe (every AAC frame stands alone), as long as its samples.
    static func load(_ p: UnsafeMutablePointer<AVPacket>, _ audio: AudioPacket, pts: Int64,
                     stream: UnsafeMutablePointer<AVStream>) throws(MovieError) {
        try MovieError.check(av_new_packet(p, Int32(audio.bytes.count)), "av_new_packet")
        audio.bytes.withUnsafeBufferPointer { p.pointee.data.update(from: $0.baseAddress!, count: $0.count) }
        p.pointee.pts = pts
        p.pointee.dts = pts
        p.pointee.duration = Int64(audio.samples)
        p.pointee.flags |= AV_PKT_FLAG_KEY
        p.pointee.stream_index = stream.pointee.index
    }

    /// Writes the header of a fragmented MP4 (ftyp and an empty moov) through `format`:
    /// fragments only when the writer cuts one (frag_custom), each moof its own base — the
    /// layout browsers' MSE and a cut-off file both need. `delayMoov`: the moov waits for every
    /// track's first packet (its edit list places a track that starts late). `placed`: no edit
    /// list — each fragment's decode time says where it is (the live stream with sound).
    static func writeHeader(_ format: UnsafeMutablePointer<AVFormatContext>?, delayMoov: Bool = false, placed: Bool = false) -> Int32 {
        var options: OpaquePointer?
        av_dict_set(&options, "movflags", "frag_custom+empty_moov+default_base_moof" + (delayMoov ? "+delay_moov" : ""), 0)
        if placed { av_dict_set(&options, "use_editlist", "0", 0) }
        let rc = avformat_write_header(format, &options)
        av_dict_free(&options)
        return rc
    }

    /// Frees a muxer and its AVIO context (the sink itself is its owner's).
    static func release(format: inout UnsafeMutablePointer<AVFormatContext>?,
                        io: inout UnsafeMutablePointer<AVIOContext>?) {
        if let f = format {
            f.pointee.pb = nil
            avformat_free_context(f)
            format = nil
        }
        if io != nil {
            av_freep(&io!.pointee.buffer)
            avio_context_free(&io)
        }
    }
}
