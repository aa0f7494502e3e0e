// One movie file: libavformat's MP4 muxer writing fragments (moof + mdat) to a FileSink,
// fed by libx264 through libavcodec (H.264) or by JPEGs as they are (MJPEG). Fragments are
// cut at a keyframe once a second of movie has gathered (every frame for a timelapse), and
// each is made durable at once: a crash leaves the file whole up to its last fragment. Disk
// for each packet, its fragment and the file's end is reserved before the muxer gets it: a
// full disk ends the movie at the last packet that fitted, its fragment and index whole.
// One owner, one thread: the recorder's encoding thread.

import CFFmpeg
import Foundation
import SystemSupport

final class FragmentedMP4Writer {
    struct Setup {
        var path: String
        var width: Int
        var height: Int
        var codec: MovieCodec
        /// The nominal frame rate: the length of the last frame, x264's rate control.
        var fps: Double
        var preset: String
        /// Clockwise degrees and mirroring for the display matrix (players turn the picture).
        var rotation = 0
        var mirrored = false
        /// Cut a fragment after every frame (timelapse: a frame may be minutes apart).
        var fragmentEveryFrame = false
        /// H.264 encoded elsewhere (the live encoder's stream, shared): its SPS and PPS (Annex
        /// B). The writer then has no encoder and takes access units (`write(unit:)`).
        var extradata: [UInt8]? = nil
        /// A sound track beside the picture (AAC packets encoded elsewhere: `write(audio:pts:)`).
        var audio: AudioTrackInfo? = nil
    }

    /// Time base of every timestamp: 90 kHz, as MPEG uses.
    static let ticksPerSecond: Int64 = 90_000

    let setup: Setup
    private let sink: FileSink
    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var io: UnsafeMutablePointer<AVIOContext>?
    private var encoder: UnsafeMutablePointer<AVCodecContext>?
    private var stream: UnsafeMutablePointer<AVStream>
    private var audioStream: UnsafeMutablePointer<AVStream>?
    private var lastAudioPts: Int64 = .min
    /// Sound packets written (the track's own count; `frames` counts pictures).
    private(set) var audioPackets = 0
    private var packet: UnsafeMutablePointer<AVPacket>?
    let frameTicks: Int64
    private var lastKeyPts: Int64 = .min
    private var fragmentStart: Int64 = .min
    private var fragmentPackets = 0
    /// Packet bytes the muxer holds for the fragment it has not written yet.
    private(set) var pendingBytes: Int64 = 0
    /// Samples of both tracks in the fragment being gathered; fragments cut; the largest's bytes.
    private var fragmentSamples = 0, fragmentsCut = 0, largestFragment: Int64 = 0
    /// The reservation that found the disk full: the movie ends with what fitted.
    private var full: MovieError?
    private(set) var frames = 0
    /// The end of the last frame written, in ticks.
    private(set) var endTicks: Int64 = 0
    private var finished = false

    init(_ setup: Setup) throws(MovieError) {
        guard setup.width > 0, setup.height > 0, setup.codec == .mjpeg || (setup.width % 2 == 0 && setup.height % 2 == 0) else {
            throw .unsupported("a movie needs an even width and height, not \(setup.width)x\(setup.height)")
        }
        self.setup = setup
        frameTicks = max(1, Int64((Double(Self.ticksPerSecond) / max(setup.fps, 0.01)).rounded()))
        sink = try FileSink(creating: setup.path)
        var fmt: UnsafeMutablePointer<AVFormatContext>?
        do {
            try MovieError.check(avformat_alloc_output_context2(&fmt, nil, "mp4", nil), "avformat_alloc_output_context2")
        } catch {
            try? Sys.unlink(setup.path)
            throw error
        }
        format = fmt
        guard let s = avformat_new_stream(fmt, nil) else {
            FragmentedMP4.release(format: &format, io: &io)
            try? Sys.unlink(setup.path)
            throw .library(call: "avformat_new_stream", code: cff_averror(ENOMEM))
        }
        stream = s
        if setup.audio != nil {
            guard let a = avformat_new_stream(fmt, nil) else {
                FragmentedMP4.release(format: &format, io: &io)
                try? Sys.unlink(setup.path)
                throw .library(call: "avformat_new_stream", code: cff_averror(ENOMEM))
            }
            audioStream = a
        }
        do {
            try open()
        } catch {
            close()
            try? Sys.unlink(setup.path)
            throw error
        }
    }

    deinit { close() }

    /// Bytes in the file plus those the muxer holds for the next fragment.
    var bytes: Int64 { sink.written + pendingBytes }
    var path: String { sink.path }

    private func open() throws(MovieError) {
        let tb = AVRational(num: 1, den: Int32(Self.ticksPerSecond))
        stream.pointee.time_base = tb
        switch setup.codec {
        case .h264 where setup.extradata != nil:
            try FragmentedMP4.describeH264(stream.pointee.codecpar!, width: setup.width, height: setup.height, extradata: setup.extradata!)
        case .h264:
            guard let codec = avcodec_find_encoder_by_name("libx264") else {
                throw .unsupported("this FFmpeg has no libx264 encoder")
            }
            guard let c = avcodec_alloc_context3(codec) else { throw .library(call: "avcodec_alloc_context3", code: cff_averror(ENOMEM)) }
            encoder = c
            c.pointee.width = Int32(setup.width)
            c.pointee.height = Int32(setup.height)
            c.pointee.pix_fmt = AV_PIX_FMT_YUV420P
            c.pointee.time_base = tb
            c.pointee.framerate = AVRational(num: Int32((setup.fps * 1000).rounded()), den: 1000)
            // A keyframe is forced each second (fragments start at one); x264's own GOP is longer.
            c.pointee.gop_size = Int32(max(2, setup.fps * 2))
            c.pointee.max_b_frames = 0
            c.pointee.thread_count = Int32(min(4, ProcessInfo.processInfo.activeProcessorCount))
            c.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER  // avcC in the moov, not in-band
            guard av_opt_set(c.pointee.priv_data, "preset", setup.preset, 0) >= 0 else {
                throw .unsupported("libx264 has no preset '\(setup.preset)'")
            }
            // No lookahead: each frame comes out as it goes in, so nothing waits in the encoder.
            av_opt_set(c.pointee.priv_data, "tune", "zerolatency", 0)
            av_opt_set(c.pointee.priv_data, "forced-idr", "1", 0)
            try MovieError.check(avcodec_open2(c, codec, nil), "avcodec_open2 libx264")
            try MovieError.check(avcodec_parameters_from_context(stream.pointee.codecpar, c), "avcodec_parameters_from_context")
        case .mjpeg:
            let p = stream.pointee.codecpar!
            p.pointee.codec_type = AVMEDIA_TYPE_VIDEO
            p.pointee.codec_id = AV_CODEC_ID_MJPEG
            p.pointee.width = Int32(setup.width)
            p.pointee.height = Int32(setup.height)
        }
        stream.pointee.avg_frame_rate = AVRational(num: Int32((setup.fps * 1000).rounded()), den: 1000)
        if setup.rotation != 0 || setup.mirrored {
            if let side = av_stream_new_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, 9 * 4) {
                let m = UnsafeMutableRawPointer(side).assumingMemoryBound(to: Int32.self)
                for (i, v) in Self.trackMatrix(rotation: setup.rotation, mirrored: setup.mirrored).enumerated() { m[i] = v }
            }
        }
        if let audio = setup.audio, let a = audioStream {
            a.pointee.time_base = AVRational(num: 1, den: Int32(audio.sampleRate))
            try FragmentedMP4.describeAudio(a.pointee.codecpar!, audio)
        }
        io = try sink.makeIOContext()
        format!.pointee.pb = io
        try check(FragmentedMP4.writeHeader(format, delayMoov: setup.audio != nil), "avformat_write_header")
        guard let p = av_packet_alloc() else { throw .library(call: "av_packet_alloc", code: cff_averror(ENOMEM)) }
        packet = p
        try makeDurable()  // the init segment, so even a file cut at once can be repaired
    }

    /// The track header's matrix (ISO/IEC 14496-12 §8.3.2, as QuickTime and iPhones write
    /// it: a point's row vector times the matrix) for a picture the player turns `rotation`
    /// degrees clockwise, mirrored first. libavformat 5.1 writes the side data into `tkhd`
    /// as it is (its demuxer reads it back transposed), so it is spelled here in the file's
    /// own terms: 90° clockwise is {0, 1, 0, -1, 0, 0, 0, 0, 1} in 16.16 and 2.30.
    static func trackMatrix(rotation: Int, mirrored: Bool) -> [Int32] {
        let one: Int32 = 1 << 16
        let (cos, sin): (Int32, Int32) = switch ((rotation % 360) + 360) % 360 {
        case 90: (0, 1)
        case 180: (-1, 0)
        case 270: (0, -1)
        default: (1, 0)
        }
        let flip: Int32 = mirrored ? -1 : 1
        return [flip * cos * one, flip * sin * one, 0, -sin * one, cos * one, 0, 0, 0, 1 << 30]
    }

    /// Encodes one YUV 4:2:0 picture at `pts` (ticks from the start; must grow).
    func encode(_ picture: UnsafeMutablePointer<AVFrame>, pts: Int64) throws(MovieError) {
        guard let encoder else { throw .unsupported("this movie is MJPEG") }
        picture.pointee.pts = pts
        let due = lastKeyPts == .min || pts - lastKeyPts >= Self.ticksPerSecond - frameTicks / 2
        picture.pointee.pict_type = due ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        if due { lastKeyPts = pts }
        try check(avcodec_send_frame(encoder, picture), "avcodec_send_frame")
        try drain()
    }

    /// Writes one JPEG as it is at `pts`.
    func write(jpeg: UnsafeRawBufferPointer, pts: Int64) throws(MovieError) {
        guard let packet, let base = jpeg.baseAddress else { return }
        try check(av_new_packet(packet, Int32(jpeg.count)), "av_new_packet")
        packet.pointee.data.update(from: base.assumingMemoryBound(to: UInt8.self), count: jpeg.count)
        packet.pointee.pts = pts
        packet.pointee.dts = pts
        packet.pointee.flags |= AV_PKT_FLAG_KEY
        try mux(packet)
    }

    /// Writes one access unit encoded elsewhere (Annex B; the muxer makes it MP4's
    /// length-prefixed form) at `pts`.
    func write(unit: UnsafeRawBufferPointer, pts: Int64, keyframe: Bool) throws(MovieError) {
        guard let packet, let base = unit.baseAddress else { return }
        try check(av_new_packet(packet, Int32(unit.count)), "av_new_packet")
        packet.pointee.data.update(from: base.assumingMemoryBound(to: UInt8.self), count: unit.count)
        packet.pointee.pts = pts
        packet.pointee.dts = pts
        if keyframe { packet.pointee.flags |= AV_PKT_FLAG_KEY }
        try mux(packet)
    }

    /// Writes one sound packet (AAC, encoded elsewhere) at `pts`, in samples from the movie's
    /// start. It joins the fragment being gathered: the picture decides where fragments are cut.
    /// A packet not after the last one is skipped (a track's time only grows).
    func write(audio packet: AudioPacket, pts: Int64) throws(MovieError) {
        guard let a = audioStream, let p = self.packet, pts > lastAudioPts else { return }
        try makeRoom(for: Int64(packet.bytes.count))
        try FragmentedMP4.load(p, packet, pts: pts, stream: a)
        let size = Int64(p.pointee.size)
        let rc = av_write_frame(format, p)
        av_packet_unref(p)
        try check(rc, "av_write_frame (audio)")
        lastAudioPts = pts
        audioPackets += 1
        fragmentSamples += 1
        pendingBytes += size
    }

    /// Drains the encoder, writes the last fragment and the index (mfra), and makes the
    /// file durable. The writer is done afterwards.
    func finish() throws(MovieError) {
        guard !finished else { return }
        finished = true
        if let encoder {
            do throws(MovieError) {
                try check(avcodec_send_frame(encoder, nil), "avcodec_send_frame (flush)")
                try drain()
            } catch {
                guard full != nil else { throw error }  // those still in the encoder did not fit
            }
        }
        try check(av_write_trailer(format), "av_write_trailer")
        pendingBytes = 0
        avio_flush(io)
        if let failure = sink.failure { throw .system(failure) }
        try sink.sync()
        try sink.close()
    }

    /// Gives up on the file (after a failure): closes it as it is; the caller repairs it.
    func abandon() {
        finished = true
        try? sink.close()
    }

    private func drain() throws(MovieError) {
        guard let encoder, let packet else { return }
        while true {
            let rc = avcodec_receive_packet(encoder, packet)
            if rc == cff_eagain() || rc == cff_eof() { return }
            try check(rc, "avcodec_receive_packet")
            try mux(packet)
        }
    }

    private func mux(_ p: UnsafeMutablePointer<AVPacket>) throws(MovieError) {
        let key = p.pointee.flags & AV_PKT_FLAG_KEY != 0
        let pts = p.pointee.pts
        do throws(MovieError) { try makeRoom(for: Int64(p.pointee.size)) } catch {
            av_packet_unref(p)
            throw error
        }
        if fragmentPackets > 0 && key && pts - fragmentStart >= Self.ticksPerSecond - frameTicks / 2 && soundIsIn(at: pts) {
            try cutFragment()
        }
        if fragmentPackets == 0 { fragmentStart = pts }
        p.pointee.stream_index = stream.pointee.index
        p.pointee.duration = frameTicks
        av_packet_rescale_ts(p, AVRational(num: 1, den: Int32(Self.ticksPerSecond)), stream.pointee.time_base)
        let size = Int64(p.pointee.size)
        let rc = av_write_frame(format, p)
        av_packet_unref(p)
        try check(rc, "av_write_frame")
        fragmentPackets += 1
        fragmentSamples += 1
        pendingBytes += size
        frames += 1
        endTicks = max(endTicks, pts + frameTicks)
        if setup.fragmentEveryFrame { try cutFragment() }
    }

    /// Whether a fragment may be cut at `pts`. The first cut writes the moov (delay_moov), and
    /// its edit list is what places a sound track that starts after the picture; a sound track
    /// with no packet yet would get none, and libavformat would then move its first packet to
    /// time 0 — the sound early by up to an AAC frame, for the whole movie (seen when a motion
    /// movie's pre-roll reached the writer before its sound did). So a movie with sound waits
    /// for its first packet, three seconds at most (a microphone that went silent must not cost
    /// a crash more than that).
    private func soundIsIn(at pts: Int64) -> Bool {
        audioStream == nil || audioPackets > 0 || pts >= 3 * Self.ticksPerSecond
    }

    /// Reserves disk for a packet of `size` bytes, its fragment and what the end writes: the
    /// moof (at most 32 bytes a sample), a movie with sound's moov and the index (mfra: an
    /// entry a fragment and track); ahead, two of the largest fragments so far (4 MiB or more).
    private func makeRoom(for size: Int64) throws(MovieError) {
        if let full { throw full }
        let end: Int64 = 64 * 1024 + 32 * Int64(fragmentSamples + 1) + 64 * Int64(fragmentsCut + 1)
        do throws(MovieError) {
            try sink.reserve(pendingBytes + size + end, ahead: max(4 << 20, 2 * largestFragment) + end)
        } catch {
            if error.isStorageFull { full = error }
            throw error
        }
    }

    /// Writes the fragment gathered so far and makes it durable.
    private func cutFragment() throws(MovieError) {
        try check(av_write_frame(format, nil), "av_write_frame (fragment)")
        // With sound, the first flush writes the moov alone (delay_moov) and keeps the
        // fragment's samples: a second one writes them, so the first fragment is a second too.
        if fragmentsCut == 0 && audioStream != nil { try check(av_write_frame(format, nil), "av_write_frame (first fragment)") }
        fragmentsCut += 1
        largestFragment = max(largestFragment, pendingBytes)
        fragmentPackets = 0
        fragmentSamples = 0
        pendingBytes = 0
        try makeDurable()
    }

    private func makeDurable() throws(MovieError) {
        avio_flush(io)
        if let failure = sink.failure { throw .system(failure) }
        try sink.sync()
    }

    /// A failed write is reported with its errno (the muxer only knows an AVERROR).
    private func check(_ rc: Int32, _ call: String) throws(MovieError) {
        if let failure = sink.failure { throw .system(failure) }
        try MovieError.check(rc, call)
    }

    private func close() {
        if encoder != nil { avcodec_free_context(&encoder) }
        if packet != nil { av_packet_free(&packet) }
        FragmentedMP4.release(format: &format, io: &io)
    }
}
