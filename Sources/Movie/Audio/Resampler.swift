// A microphone's rate that the codec cannot take (Opus has five rates: a 44.1 kHz card, a
// 32 kHz USB headset) is converted by FFmpeg's libswresample to the codec's rate, 48 kHz: the
// sound of every camera reaches WebRTC, whatever its card runs at. Its output sample n is the
// input's time n / outputRate (the filter's delay is swresample's to hide), so the packets'
// capture times hold across it.
// One owner: the encoder that holds it.

import CFFmpeg

final class Resampler {
    let inputRate: Int
    let outputRate: Int
    private let channels: Int
    private var context: OpaquePointer?

    /// Interleaved 16-bit at `inputRate` to planar float at `outputRate`, `channels` (1 or 2) each.
    init(from inputRate: Int, to outputRate: Int, channels: Int) throws(MovieError) {
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        // The same layout in and out (only the rate and the sample format change).
        var outLayout = AVChannelLayout(), inLayout = AVChannelLayout()
        av_channel_layout_default(&outLayout, Int32(channels))
        av_channel_layout_default(&inLayout, Int32(channels))
        defer {
            av_channel_layout_uninit(&outLayout)
            av_channel_layout_uninit(&inLayout)
        }
        var ctx: OpaquePointer?
        try MovieError.check(swr_alloc_set_opts2(&ctx, &outLayout, AV_SAMPLE_FMT_FLTP, Int32(outputRate),
                                                 &inLayout, AV_SAMPLE_FMT_S16, Int32(inputRate), 0, nil), "swr_alloc_set_opts2")
        context = ctx
        do throws(MovieError) {
            try MovieError.check(swr_init(ctx), "swr_init")
        } catch {
            swr_free(&context)
            throw error
        }
    }

    deinit { swr_free(&context) }

    /// The samples of `input` (interleaved; nil: what the filter still holds) at the output
    /// rate, appended to `planes` (one array a channel).
    func convert(_ input: UnsafeBufferPointer<Int16>?, into planes: inout [[Float]]) throws(MovieError) {
        let frames = (input?.count ?? 0) / channels
        let room = Int(swr_get_out_samples(context, Int32(frames)))
        guard room > 0 else { return }
        // One buffer, a plane a channel after the other.
        var out = [Float](repeating: 0, count: room * channels)
        let made: Int32 = out.withUnsafeMutableBytes { raw in
            let base = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var planes: [UnsafeMutablePointer<UInt8>?] = (0..<channels).map { base + $0 * room * MemoryLayout<Float>.stride }
            return planes.withUnsafeMutableBufferPointer { p in
                guard let input else { return swr_convert(context, p.baseAddress, Int32(room), nil, 0) }
                var source: UnsafePointer<UInt8>? = UnsafeRawPointer(input.baseAddress!).assumingMemoryBound(to: UInt8.self)
                return swr_convert(context, p.baseAddress, Int32(room), &source, Int32(frames))
            }
        }
        try MovieError.check(made, "swr_convert")
        for ch in 0..<channels { planes[ch] += out[(ch * room)..<(ch * room + Int(made))] }
    }
}
