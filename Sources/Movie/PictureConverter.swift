// Camera frames to the YUV 4:2:0 pictures x264 takes: libswscale converts every raw V4L2
// layout (and libavcodec decodes MJPEG first); a digital zoom is a centre crop that
// libswscale scales back to the full size on the way. One owner: the encoding thread.

import CFFmpeg
import CameraCore

final class PictureConverter {
    let width: Int
    let height: Int
    private var scaler: OpaquePointer?
    private var picture: UnsafeMutablePointer<AVFrame>?
    private var decoder: UnsafeMutablePointer<AVCodecContext>?
    private var decoded: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?

    /// Pictures of `width`×`height` (even numbers).
    init(width: Int, height: Int) throws(MovieError) {
        self.width = width
        self.height = height
        picture = try PictureConverter.picture(width: width, height: height)
    }

    /// A picture of `width`×`height` in `format` (YUV 4:2:0 unless said) with its buffers (freed with av_frame_free).
    static func picture(width: Int, height: Int, format: AVPixelFormat = AV_PIX_FMT_YUV420P) throws(MovieError) -> UnsafeMutablePointer<AVFrame> {
        var p = av_frame_alloc()
        guard let frame = p else { throw .library(call: "av_frame_alloc", code: cff_averror(ENOMEM)) }
        frame.pointee.format = format.rawValue
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
        let rc = av_frame_get_buffer(frame, 0)
        guard rc >= 0 else {
            av_frame_free(&p)
            throw .library(call: "av_frame_get_buffer", code: rc)
        }
        return frame
    }

    deinit {
        sws_freeContext(scaler)
        av_frame_free(&picture)
        av_frame_free(&decoded)
        av_packet_free(&packet)
        avcodec_free_context(&decoder)
    }

    static func pixelFormat(_ f: PixelFormat) -> AVPixelFormat? {
        switch f {
        case .yuyv: AV_PIX_FMT_YUYV422
        case .uyvy: AV_PIX_FMT_UYVY422
        case .yvyu: AV_PIX_FMT_YVYU422
        case .nv12: AV_PIX_FMT_NV12
        case .nv16: AV_PIX_FMT_NV16
        case .yu12: AV_PIX_FMT_YUV420P
        case .grey: AV_PIX_FMT_GRAY8
        case .rgb24: AV_PIX_FMT_RGB24
        case .bgr24: AV_PIX_FMT_BGR24
        case .rgb565: AV_PIX_FMT_RGB565LE
        case .mjpeg: nil
        }
    }

    /// The picture for one frame, `zoom` (≥ 1) applied. Valid until the next call.
    func convert(_ bytes: UnsafeRawBufferPointer, format: VideoFormat, stride: Int, zoom: Double,
                 center: Point = .center) throws(MovieError) -> UnsafeMutablePointer<AVFrame> {
        let (w, h) = (format.width, format.height)
        let crop = Self.crop(width: w, height: h, zoom: zoom, center: center)
        var planes: [UnsafePointer<UInt8>?] = [nil, nil, nil, nil]
        var strides: [Int32] = [0, 0, 0, 0]
        let source: AVPixelFormat
        if format.pixelFormat == .mjpeg {
            let frame = try decode(bytes)
            source = AVPixelFormat(frame.pointee.format)
            guard let desc = av_pix_fmt_desc_get(source) else { throw .unsupported("decoded an unknown pixel format") }
            let (cw, ch) = (Int(desc.pointee.log2_chroma_w), Int(desc.pointee.log2_chroma_h))
            withUnsafeBytes(of: frame.pointee.data) { data in
                withUnsafeBytes(of: frame.pointee.linesize) { lines in
                    let d = data.bindMemory(to: UnsafeMutablePointer<UInt8>?.self)
                    let l = lines.bindMemory(to: Int32.self)
                    for i in 0..<3 where d[i] != nil {
                        let (sx, sy) = i == 0 ? (0, 0) : (cw, ch)
                        planes[i] = UnsafePointer(d[i]! + (crop.y >> sy) * Int(l[i]) + (crop.x >> sx))
                        strides[i] = l[i]
                    }
                }
            }
        } else {
            guard let f = Self.pixelFormat(format.pixelFormat) else { throw .unsupported("no conversion from \(format.pixelFormat.rawValue)") }
            let layout = Self.planes(format.pixelFormat, height: h, stride: stride)
            let needed = layout.map { $0.offset + $0.stride * (h >> $0.rowShift) }.max() ?? 0
            guard bytes.count >= needed, stride >= (format.pixelFormat.bytesPerLine(width: w) ?? 0) else {
                throw .unsupported("a short frame: \(bytes.count) bytes for \(w)x\(h) \(format.pixelFormat.rawValue) at stride \(stride)")
            }
            source = f
            let base = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            for (i, plane) in layout.enumerated() {
                planes[i] = base + plane.offset + (crop.y >> plane.rowShift) * plane.stride + (crop.x >> plane.columnShift) * plane.bytesPerPixel
                strides[i] = Int32(plane.stride)
            }
        }
        scaler = sws_getCachedContext(scaler, Int32(crop.width), Int32(crop.height), source, Int32(width), Int32(height),
                                      AV_PIX_FMT_YUV420P, SWS_BILINEAR, nil, nil, nil)
        guard let scaler, let picture else { throw .unsupported("libswscale cannot convert \(format.pixelFormat.rawValue)") }
        try MovieError.check(av_frame_make_writable(picture), "av_frame_make_writable")
        let rc = withUnsafeMutableBytes(of: &picture.pointee.data) { data in
            withUnsafeBytes(of: picture.pointee.linesize) { lines in
                planes.withUnsafeBufferPointer { p in
                    strides.withUnsafeBufferPointer { s in
                        sws_scale(scaler, p.baseAddress, s.baseAddress, 0, Int32(crop.height),
                                  data.bindMemory(to: UnsafeMutablePointer<UInt8>?.self).baseAddress,
                                  lines.bindMemory(to: Int32.self).baseAddress)
                    }
                }
            }
        }
        guard rc > 0 else { throw .library(call: "sws_scale", code: rc) }
        return picture
    }

    /// The crop a zoom keeps, about `center` as far as the frame allows, on even coordinates
    /// (chroma is subsampled).
    static func crop(width: Int, height: Int, zoom: Double, center: Point = .center) -> (x: Int, y: Int, width: Int, height: Int) {
        guard zoom > 1.0001 else { return (0, 0, width, height) }
        let cw = max(2, Int(Double(width) / zoom) & ~1), ch = max(2, Int(Double(height) / zoom) & ~1)
        let x = Int(FrameTransform.cropStart(extent: Double(width), crop: Double(cw), center: center.x)) & ~1
        let y = Int(FrameTransform.cropStart(extent: Double(height), crop: Double(ch), center: center.y)) & ~1
        return (x, y, cw, ch)
    }

    struct Plane { var offset: Int, stride: Int, bytesPerPixel: Int, columnShift: Int, rowShift: Int }

    /// Where V4L2's single-buffer layouts keep each plane (`stride`: the first plane's row).
    static func planes(_ f: PixelFormat, height h: Int, stride s: Int) -> [Plane] {
        switch f {
        case .yuyv, .uyvy, .yvyu, .rgb565: [Plane(offset: 0, stride: s, bytesPerPixel: 2, columnShift: 0, rowShift: 0)]
        case .rgb24, .bgr24: [Plane(offset: 0, stride: s, bytesPerPixel: 3, columnShift: 0, rowShift: 0)]
        case .grey: [Plane(offset: 0, stride: s, bytesPerPixel: 1, columnShift: 0, rowShift: 0)]
        case .nv12, .nv16:
            // Interleaved U/V pairs: a pair every two columns, so a column's byte offset is x.
            [Plane(offset: 0, stride: s, bytesPerPixel: 1, columnShift: 0, rowShift: 0),
             Plane(offset: s * h, stride: s, bytesPerPixel: 2, columnShift: 1, rowShift: f == .nv12 ? 1 : 0)]
        case .yu12:
            [Plane(offset: 0, stride: s, bytesPerPixel: 1, columnShift: 0, rowShift: 0),
             Plane(offset: s * h, stride: s / 2, bytesPerPixel: 1, columnShift: 1, rowShift: 1),
             Plane(offset: s * h + (s / 2) * ((h + 1) / 2), stride: s / 2, bytesPerPixel: 1, columnShift: 1, rowShift: 1)]
        case .mjpeg: []
        }
    }

    /// Decodes one JPEG with libavcodec's MJPEG decoder.
    private func decode(_ jpeg: UnsafeRawBufferPointer) throws(MovieError) -> UnsafeMutablePointer<AVFrame> {
        if decoder == nil {
            guard let codec = avcodec_find_decoder(AV_CODEC_ID_MJPEG), let c = avcodec_alloc_context3(codec) else {
                throw .unsupported("this FFmpeg has no MJPEG decoder")
            }
            decoder = c
            try MovieError.check(avcodec_open2(c, codec, nil), "avcodec_open2 mjpeg")
            decoded = av_frame_alloc()
            packet = av_packet_alloc()
        }
        guard let decoder, let decoded, let packet, let base = jpeg.baseAddress else {
            throw .library(call: "av_frame_alloc", code: cff_averror(ENOMEM))
        }
        try MovieError.check(av_new_packet(packet, Int32(jpeg.count)), "av_new_packet")
        packet.pointee.data.update(from: base.assumingMemoryBound(to: UInt8.self), count: jpeg.count)
        let sent = avcodec_send_packet(decoder, packet)
        av_packet_unref(packet)
        try MovieError.check(sent, "avcodec_send_packet mjpeg")
        try MovieError.check(avcodec_receive_frame(decoder, decoded), "avcodec_receive_frame mjpeg")
        return decoded
    }
}
