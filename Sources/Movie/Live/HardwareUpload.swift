// VA-API's encoder takes pictures in the GPU's memory: a device opened once (the machine's
// default render node), a pool of NV12 surfaces at the stream's size, and each YUV 4:2:0
// picture converted to NV12 (the one layout every VA-API driver uploads) and copied into a
// surface. One owner: the live encoder that opened it.

import CFFmpeg

final class HardwareUpload {
    private var device: UnsafeMutablePointer<AVBufferRef>?
    private(set) var frames: UnsafeMutablePointer<AVBufferRef>?
    private var scaler: OpaquePointer?
    private var nv12: UnsafeMutablePointer<AVFrame>?
    private var surface: UnsafeMutablePointer<AVFrame>?
    private let width: Int, height: Int

    init(width: Int, height: Int) throws(MovieError) {
        self.width = width
        self.height = height
        try MovieError.check(av_hwdevice_ctx_create(&device, AV_HWDEVICE_TYPE_VAAPI, nil, nil, 0), "av_hwdevice_ctx_create vaapi")
        guard let f = av_hwframe_ctx_alloc(device) else { throw .library(call: "av_hwframe_ctx_alloc", code: cff_averror(ENOMEM)) }
        frames = f
        f.pointee.data.withMemoryRebound(to: AVHWFramesContext.self, capacity: 1) { c in
            c.pointee.format = AV_PIX_FMT_VAAPI
            c.pointee.sw_format = AV_PIX_FMT_NV12
            c.pointee.width = Int32(width)
            c.pointee.height = Int32(height)
            c.pointee.initial_pool_size = 4
        }
        try MovieError.check(av_hwframe_ctx_init(f), "av_hwframe_ctx_init")
        nv12 = try PictureConverter.picture(width: width, height: height, format: AV_PIX_FMT_NV12)
        surface = av_frame_alloc()
    }

    deinit {
        sws_freeContext(scaler)
        av_frame_free(&nv12)
        av_frame_free(&surface)
        av_buffer_unref(&frames)
        av_buffer_unref(&device)
    }

    /// `picture` (YUV 4:2:0) in a surface, its pts and picture type kept. Valid until the next call.
    func upload(_ picture: UnsafeMutablePointer<AVFrame>) throws(MovieError) -> UnsafeMutablePointer<AVFrame> {
        guard let nv12, let surface, let frames else { throw .unsupported("no VA-API surfaces") }
        scaler = sws_getCachedContext(scaler, Int32(width), Int32(height), AV_PIX_FMT_YUV420P, Int32(width), Int32(height),
                                      AV_PIX_FMT_NV12, SWS_POINT, nil, nil, nil)
        guard let scaler else { throw .unsupported("libswscale cannot make NV12") }
        try MovieError.check(av_frame_make_writable(nv12), "av_frame_make_writable")
        let rc = withUnsafeBytes(of: picture.pointee.data) { src in
            withUnsafeBytes(of: picture.pointee.linesize) { srcLines in
                withUnsafeMutableBytes(of: &nv12.pointee.data) { dst in
                    withUnsafeBytes(of: nv12.pointee.linesize) { dstLines in
                        sws_scale(scaler, src.bindMemory(to: UnsafePointer<UInt8>?.self).baseAddress,
                                  srcLines.bindMemory(to: Int32.self).baseAddress, 0, Int32(height),
                                  dst.bindMemory(to: UnsafeMutablePointer<UInt8>?.self).baseAddress,
                                  dstLines.bindMemory(to: Int32.self).baseAddress)
                    }
                }
            }
        }
        guard rc > 0 else { throw .library(call: "sws_scale", code: rc) }
        av_frame_unref(surface)
        try MovieError.check(av_hwframe_get_buffer(frames, surface, 0), "av_hwframe_get_buffer")
        try MovieError.check(av_hwframe_transfer_data(surface, nv12, 0), "av_hwframe_transfer_data")
        surface.pointee.pts = picture.pointee.pts
        surface.pointee.pict_type = picture.pointee.pict_type
        return surface
    }
}
