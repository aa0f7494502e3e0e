// Lossless rotation, mirroring and crop of camera JPEGs (MJPEG) with tjTransform: the
// DCT coefficients are moved, not recomputed, so there is no quality loss and no decode.

import CTurboJPEG
import CameraCore

public final class JPEGTransformer {
    private let handle: tjhandle

    public init() throws(JPEGError) {
        guard let h = tjInitTransform() else { throw JPEGError.last("tjInitTransform", nil) }
        handle = h
    }

    deinit { tjDestroy(handle) }

    /// The operation that rotates clockwise by `rotation` and then mirrors.
    static func operation(rotation: Int, mirrored: Bool) -> TJXOP {
        switch (rotation, mirrored) {
        case (90, false): TJXOP_ROT90
        case (180, false): TJXOP_ROT180
        case (270, false): TJXOP_ROT270
        case (0, true): TJXOP_HFLIP
        case (90, true): TJXOP_TRANSPOSE
        case (180, true): TJXOP_VFLIP
        case (270, true): TJXOP_TRANSVERSE
        default: TJXOP_NONE
        }
    }

    /// Applies `t`; zoom becomes a centre crop aligned to the JPEG's MCUs (so the output is
    /// smaller, not rescaled). Returns the new JPEG and its size.
    public func apply(_ jpeg: UnsafeRawBufferPointer, _ t: FrameTransform) throws(JPEGError) -> (jpeg: [UInt8], width: Int, height: Int) {
        let src = jpeg.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var w: Int32 = 0, h: Int32 = 0, sub: Int32 = 0, cs: Int32 = 0
        guard tjDecompressHeader3(handle, src, UInt(jpeg.count), &w, &h, &sub, &cs) == 0 else {
            throw JPEGError.last("tjDecompressHeader3", handle)
        }
        var xform = tjtransform()
        xform.op = Int32(Self.operation(rotation: t.rotation, mirrored: t.mirrored).rawValue)
        xform.options = TJXOPT_TRIM
        let turned = t.rotation == 90 || t.rotation == 270
        var outW = Int(turned ? h : w), outH = Int(turned ? w : h)
        if t.zoom > 1.0001, sub >= 0 {
            // MCU size in the output's orientation.
            var mw = Int(Self.mcu(sub).width), mh = Int(Self.mcu(sub).height)
            if turned { swap(&mw, &mh) }
            let cw = max(mw, (Int(Double(outW) / t.zoom) / mw) * mw), ch = max(mh, (Int(Double(outH) / t.zoom) / mh) * mh)
            let x = ((outW - cw) / 2 / mw) * mw, y = ((outH - ch) / 2 / mh) * mh
            xform.r = tjregion(x: Int32(x), y: Int32(y), w: Int32(cw), h: Int32(ch))
            xform.options |= TJXOPT_CROP
            outW = cw; outH = ch
        }
        var dst: UnsafeMutablePointer<UInt8>?
        var dstSize: UInt = 0
        let rc = tjTransform(handle, src, UInt(jpeg.count), 1, &dst, &dstSize, &xform, 0)
        defer { if let dst { tjFree(dst) } }
        guard rc == 0, let dst else { throw JPEGError.last("tjTransform", handle) }
        let out = Array(UnsafeBufferPointer(start: dst, count: Int(dstSize)))
        let size = (try? JPEGDecoder.size(of: out)) ?? (width: outW, height: outH)
        return (out, size.width, size.height)
    }

    static func mcu(_ subsampling: Int32) -> (width: Int32, height: Int32) {
        switch subsampling {
        case Int32(TJSAMP_444.rawValue), Int32(TJSAMP_GRAY.rawValue): (8, 8)
        case Int32(TJSAMP_422.rawValue): (16, 8)
        case Int32(TJSAMP_440.rawValue): (8, 16)
        case Int32(TJSAMP_411.rawValue): (32, 8)
        default: (16, 16)
        }
    }
}
