// Sound encoding through FFmpeg: AAC-LC with FFmpeg's own encoder (`aac`: movies, RTSP, fMP4)
// and Opus with libopus (`libopus`: WebRTC). 16-bit interleaved samples in; packets out (1024
// samples for AAC, 20 ms for Opus), each stamped with the capture time of its first sample.
// The encoder's priming (AAC's 1024 samples, Opus's 312 of look-ahead) is FFmpeg's: a
// packet's pts is its input position, so a decoder that honours the priming puts every
// sample back where it was captured, and one that does not plays it that much late.
// One owner, one thread (the microphone's capture thread, through AudioEncodeStream).

import CFFmpeg
import CameraCore

/// An audio track's description, as a muxer or an SDP needs it.
public struct AudioTrackInfo: Sendable, Equatable {
    public enum Codec: String, Sendable, Codable { case aac, opus }
    public var codec: Codec
    public var sampleRate: Int
    public var channels: Int
    /// The decoder's configuration (AAC: the AudioSpecificConfig, ISO/IEC 14496-3 §1.6.2.1;
    /// Opus: none — RTP carries none, RFC 7587).
    public var extradata: [UInt8]
    public var bitrate: Int

    public init(codec: Codec, sampleRate: Int, channels: Int, extradata: [UInt8], bitrate: Int) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
        self.extradata = extradata
        self.bitrate = bitrate
    }

    /// AAC-LC at `sampleRate` with `channels`, at the default bitrate: its AudioSpecificConfig
    /// as FFmpeg's encoder writes it — object type 2, the rate's index, the channel
    /// configuration, then the explicit "no SBR" extension (sync 0x2B7, type 5, absent) that
    /// tells an HE-AAC decoder not to look for SBR. Nil for a rate AAC has no index for.
    public static func aac(sampleRate: Int, channels: Int) -> AudioTrackInfo? {
        let rates = [96_000, 88_200, 64_000, 48_000, 44_100, 32_000, 24_000, 22_050, 16_000, 12_000, 11_025, 8_000, 7_350]
        guard let index = rates.firstIndex(of: sampleRate), (1...2).contains(channels) else { return nil }
        let config = UInt16(2) << 11 | UInt16(index) << 7 | UInt16(channels) << 3
        return AudioTrackInfo(codec: .aac, sampleRate: sampleRate, channels: channels,
                              extradata: [UInt8(config >> 8), UInt8(config & 0xFF), 0x56, 0xE5, 0x00],
                              bitrate: AudioEncoder.defaultBitrate(.aac, channels: channels))
    }

    /// Opus at `sampleRate` (one of Opus's five) with `channels`, at the default bitrate.
    public static func opus(sampleRate: Int, channels: Int) -> AudioTrackInfo? {
        guard [8_000, 12_000, 16_000, 24_000, 48_000].contains(sampleRate), (1...2).contains(channels) else { return nil }
        return AudioTrackInfo(codec: .opus, sampleRate: sampleRate, channels: channels, extradata: [],
                              bitrate: AudioEncoder.defaultBitrate(.opus, channels: channels))
    }

    /// The track of `codec` for sound of this rate and channel count (nil: the codec cannot take it).
    public static func of(_ codec: Codec, sampleRate: Int, channels: Int) -> AudioTrackInfo? {
        switch codec {
        case .aac: aac(sampleRate: sampleRate, channels: channels)
        case .opus: opus(sampleRate: sampleRate, channels: channels)
        }
    }

    /// The rate `codec` encodes a microphone of `inputRate` at: its own when the codec takes
    /// it, else 48 kHz (the encoder resamples).
    public static func encodingRate(_ codec: Codec, input inputRate: Int) -> Int {
        of(codec, sampleRate: inputRate, channels: 1) != nil ? inputRate : 48_000
    }

    /// The track `codec` makes of a microphone's sound at `inputRate` (resampled where the
    /// codec cannot take that rate); nil for a channel count it cannot take.
    public static func forInput(_ codec: Codec, sampleRate inputRate: Int, channels: Int) -> AudioTrackInfo? {
        of(codec, sampleRate: encodingRate(codec, input: inputRate), channels: channels)
    }
}

/// One encoded packet: its bytes, the capture time of its first sample (seconds, the frames'
/// clock), and how many samples it holds.
public struct AudioPacket: Sendable {
    public var bytes: [UInt8]
    public var time: Double
    public var samples: Int
    /// The encoder run it belongs to: a new run starts a new timeline (a gap, a reopened microphone).
    public var run: Int

    public init(bytes: [UInt8], time: Double, samples: Int, run: Int) {
        self.bytes = bytes
        self.time = time
        self.samples = samples
        self.run = run
    }
}

public final class AudioEncoder {
    public let info: AudioTrackInfo
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private let frameSize: Int
    /// Samples gathered for the next frame, per channel (planar float: AAC's format; Opus
    /// takes them interleaved).
    private var pending: [[Float]]
    private let planar: Bool
    /// The capture time of input sample 0; samples taken, and those handed to the encoder.
    private let anchor: Double
    private var taken: Int64 = 0
    private var fed: Int64 = 0
    private let run: Int
    /// The input's rate where the codec cannot take it (nil: the input is the codec's rate).
    private let resampler: Resampler?
    private let inputRate: Int

    /// AAC: 64 kbit/s a channel, transparent enough for a room's sound at a webcam's quality.
    /// Opus: 32 kbit/s a channel, what browsers send a voice at.
    public static func defaultBitrate(_ codec: AudioTrackInfo.Codec, channels: Int) -> Int {
        (codec == .aac ? 64_000 : 32_000) * max(1, channels)
    }

    /// Opens an encoder of `codec` for `sampleRate` and `channels` (1 or 2) whose first input
    /// sample was captured at `anchor`. `inputRate`: the samples' own rate when it is not
    /// `sampleRate` (libswresample converts them).
    public init(_ kind: AudioTrackInfo.Codec, sampleRate: Int, channels: Int, bitrate: Int? = nil, anchor: Double,
                run: Int = 0, inputRate: Int? = nil) throws(MovieError) {
        guard AudioTrackInfo.of(kind, sampleRate: sampleRate, channels: channels) != nil else {
            throw .unsupported("\(kind.rawValue) here takes 1 or 2 channels at its rates, not \(channels) at \(sampleRate) Hz")
        }
        self.inputRate = inputRate ?? sampleRate
        resampler = self.inputRate == sampleRate ? nil : try Resampler(from: self.inputRate, to: sampleRate, channels: channels)
        let name = kind == .aac ? "aac" : "libopus"
        guard let codec = avcodec_find_encoder_by_name(name) else { throw .unsupported("this FFmpeg has no \(name) encoder") }
        guard let c = avcodec_alloc_context3(codec) else { throw .library(call: "avcodec_alloc_context3", code: cff_averror(ENOMEM)) }
        context = c
        self.anchor = anchor
        self.run = run
        planar = kind == .aac
        let rate = bitrate ?? Self.defaultBitrate(kind, channels: channels)
        let format = planar ? AV_SAMPLE_FMT_FLTP : AV_SAMPLE_FMT_FLT
        c.pointee.sample_fmt = format
        c.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_default(&c.pointee.ch_layout, Int32(channels))
        c.pointee.bit_rate = Int64(rate)
        if kind == .aac { c.pointee.profile = FF_PROFILE_AAC_LOW }
        c.pointee.time_base = AVRational(num: 1, den: Int32(sampleRate))
        c.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER  // AAC's AudioSpecificConfig as extradata
        do throws(MovieError) {
            // Opus: a voice of low delay, in 10 ms frames (libopus's default is 20): a frame
            // waits for its last sample, so half the frame is 10 ms less between the microphone
            // and a WebRTC viewer (issue 37's goal: 60 ms), for a few percent more packet
            // overhead. No discontinuous transmission (a silent room still sends: the stream's
            // clock never pauses).
            if kind == .opus {
                av_opt_set(c.pointee.priv_data, "application", "lowdelay", 0)
                av_opt_set(c.pointee.priv_data, "frame_duration", "10", 0)
            }
            try MovieError.check(avcodec_open2(c, codec, nil), "avcodec_open2 \(name)")
            frameSize = Int(c.pointee.frame_size > 0 ? c.pointee.frame_size : 1024)
            guard let f = av_frame_alloc(), let p = av_packet_alloc() else {
                throw .library(call: "av_frame_alloc", code: cff_averror(ENOMEM))
            }
            frame = f
            packet = p
            f.pointee.format = format.rawValue
            f.pointee.sample_rate = Int32(sampleRate)
            f.pointee.nb_samples = Int32(frameSize)
            try MovieError.check(av_channel_layout_copy(&f.pointee.ch_layout, &c.pointee.ch_layout), "av_channel_layout_copy")
            try MovieError.check(av_frame_get_buffer(f, 0), "av_frame_get_buffer")
        } catch {
            Self.free(&context, &frame, &packet)
            throw error
        }
        let extra = c.pointee.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(c.pointee.extradata_size))) } ?? []
        info = AudioTrackInfo(codec: kind, sampleRate: sampleRate, channels: channels, extradata: kind == .aac ? extra : [],
                              bitrate: rate)
        pending = Array(repeating: [], count: channels)
    }

    deinit { Self.free(&context, &frame, &packet) }

    /// The capture time of the next sample to go in.
    public var nextTime: Double { anchor + Double(taken) / Double(inputRate) }

    /// Takes interleaved 16-bit samples (`info.channels` a frame, at the input's rate);
    /// answers the packets done.
    public func encode(_ samples: UnsafeBufferPointer<Int16>) throws(MovieError) -> [AudioPacket] {
        let channels = info.channels
        let frames = samples.count / channels
        taken += Int64(frames)
        if let resampler {
            try resampler.convert(samples, into: &pending)
        } else {
            for ch in 0..<channels { pending[ch].reserveCapacity(pending[ch].count + frames) }
            for i in 0..<frames {
                for ch in 0..<channels { pending[ch].append(Float(samples[i * channels + ch]) / 32_768) }
            }
        }
        var out: [AudioPacket] = []
        while pending[0].count >= frameSize {
            try send(count: frameSize)
            try receive(into: &out)
        }
        return out
    }

    /// Encodes what is left (padded with silence) and drains the encoder: the last packets.
    public func flush() throws(MovieError) -> [AudioPacket] {
        var out: [AudioPacket] = []
        try resampler?.convert(nil, into: &pending)  // what its filter still holds
        while pending[0].count >= frameSize {
            try send(count: frameSize)
            try receive(into: &out)
        }
        if !pending[0].isEmpty {
            for ch in pending.indices { pending[ch] += [Float](repeating: 0, count: frameSize - pending[ch].count) }
            try send(count: frameSize)
            try receive(into: &out)
        }
        try MovieError.check(avcodec_send_frame(context, nil), "avcodec_send_frame (flush)")
        try receive(into: &out)
        return out
    }

    private func send(count: Int) throws(MovieError) {
        guard let frame, let context else { return }
        try MovieError.check(av_frame_make_writable(frame), "av_frame_make_writable")
        let channels = info.channels
        for ch in 0..<channels {
            if planar {
                let plane = UnsafeMutableRawPointer(frame.pointee.extended_data[ch]!).assumingMemoryBound(to: Float.self)
                pending[ch].withUnsafeBufferPointer { plane.update(from: $0.baseAddress!, count: count) }
            } else {
                let interleaved = UnsafeMutableRawPointer(frame.pointee.data.0!).assumingMemoryBound(to: Float.self)
                for i in 0..<count { interleaved[i * channels + ch] = pending[ch][i] }
            }
            pending[ch].removeFirst(count)
        }
        frame.pointee.pts = fed
        fed += Int64(count)
        try MovieError.check(avcodec_send_frame(context, frame), "avcodec_send_frame")
    }

    private func receive(into out: inout [AudioPacket]) throws(MovieError) {
        guard let context, let packet else { return }
        while true {
            let rc = avcodec_receive_packet(context, packet)
            if rc == cff_eagain() || rc == cff_eof() { return }
            try MovieError.check(rc, "avcodec_receive_packet")
            let bytes = Array(UnsafeBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)))
            // pts is the input position of the packet's first sample (negative: the priming).
            let pts = packet.pointee.pts
            let samples = packet.pointee.duration > 0 ? Int(packet.pointee.duration) : frameSize
            av_packet_unref(packet)
            out.append(AudioPacket(bytes: bytes, time: anchor + Double(pts) / Double(info.sampleRate), samples: samples, run: run))
        }
    }

    private static func free(_ c: inout UnsafeMutablePointer<AVCodecContext>?, _ f: inout UnsafeMutablePointer<AVFrame>?,
                             _ p: inout UnsafeMutablePointer<AVPacket>?) {
        if c != nil { avcodec_free_context(&c) }
        if f != nil { av_frame_free(&f) }
        if p != nil { av_packet_free(&p) }
    }
}
