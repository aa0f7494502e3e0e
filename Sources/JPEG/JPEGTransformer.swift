// Lossless rotation, mirroring and crop of camera JPEGs (MJPEG) with tjTransform: the
// DCT coefficients are moved, not recomputed, so there is no quality loss and no decode.

import CTurboJPEG
import CameraCore

public final class JPEGTransformer {
    private var handle: tjhandle

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
        do { return try transform(jpeg, t) } catch {
            // libturbojpeg 2.1 leaves a handle whose header read failed unable to read any
            // later header: one corrupt frame would fail every frame after it. Start afresh.
            if let fresh = tjInitTransform() { tjDestroy(handle); handle = fresh }
            throw error
        }
    }

    private func transform(_ jpeg: UnsafeRawBufferPointer, _ t: FrameTransform) throws(JPEGError) -> (jpeg: [UInt8], width: Int, height: Int) {
        let (src, w, h, sub) = try JPEGInput.header(handle, jpeg)
        let plan = Self.plan(width: Int(w), height: Int(h), subsampling: sub, transform: t)
        var xform = tjtransform()
        xform.op = plan.operation
        xform.options = TJXOPT_TRIM
        if let c = plan.crop {
            xform.r = tjregion(x: Int32(c.x), y: Int32(c.y), w: Int32(c.width), h: Int32(c.height))
            xform.options |= TJXOPT_CROP
        }
        let outW = plan.width, outH = plan.height
        var dst: UnsafeMutablePointer<UInt8>?
        var dstSize: UInt = 0
        let rc = tjTransform(handle, src, UInt(jpeg.count), 1, &dst, &dstSize, &xform, 0)
        defer { if let dst { tjFree(dst) } }
        guard rc == 0, let dst else { throw JPEGError.last("tjTransform", handle) }
        let out = Array(UnsafeBufferPointer(start: dst, count: Int(dstSize)))
        let size = (try? JPEGDecoder.size(of: out)) ?? Self.frameSize(out) ?? (width: outW, height: outH)
        return (out, size.width, size.height)
    }

    /// What `apply` asks of tjTransform for a `width`×`height` JPEG with chroma `subsampling`
    /// (TJSAMP_*; negative when unknown): the operation (TJXOP_*), the crop in the output's
    /// orientation, and the output's size before TJXOPT_TRIM drops partial edge MCUs.
    public struct Plan: Sendable, Equatable {
        public struct Crop: Sendable, Equatable {
            public var x: Int, y: Int, width: Int, height: Int
        }
        public var operation: Int32
        public var crop: Crop?
        public var width: Int
        public var height: Int
        /// The grid a crop is aligned to: the MCU (both orientations' when turned).
        public var mcuWidth: Int, mcuHeight: Int
    }

    /// Zoom becomes a crop about the transform's centre, aligned to the JPEG's MCUs (so the output is smaller, not
    /// rescaled).
    public static func plan(width w: Int, height h: Int, subsampling sub: Int32, transform t: FrameTransform) -> Plan {
        let turned = t.rotation == 90 || t.rotation == 270
        var outW = turned ? h : w, outH = turned ? w : h
        // The crop's grid: the MCU in the output's orientation, and when turned also the
        // source's (tjTransform checks x and y against the source's MCU): the larger side both ways.
        var mw = Int(Self.mcu(sub).width), mh = Int(Self.mcu(sub).height)
        if turned { mw = max(mw, mh); mh = mw }
        var crop: Plan.Crop?
        if t.zoom > 1.0001, sub >= 0 {
            // At least one MCU, at most the image (a side shorter than an MCU stays whole).
            let cw = min(outW, max(mw, (Int(Double(outW) / t.zoom) / mw) * mw))
            let ch = min(outH, max(mh, (Int(Double(outH) / t.zoom) / mh) * mh))
            // About the centre as the output is oriented, on the MCU grid.
            let c = t.outputCenter
            let x = (Int(FrameTransform.cropStart(extent: Double(outW), crop: Double(cw), center: c.x)) / mw) * mw
            let y = (Int(FrameTransform.cropStart(extent: Double(outH), crop: Double(ch), center: c.y)) / mh) * mh
            crop = Plan.Crop(x: x, y: y, width: cw, height: ch)
            outW = cw; outH = ch
        }
        return Plan(operation: Int32(Self.operation(rotation: t.rotation, mirrored: t.mirrored).rawValue),
                    crop: crop, width: outW, height: outH, mcuWidth: mw, mcuHeight: mh)
    }

    /// The size in a JPEG's SOF marker. tjDecompressHeader3 refuses outputs whose sampling it
    /// cannot name (4:1:1 turned by 90° is "1x4"), and TJXOPT_TRIM may have cut their size.
    static func frameSize(_ jpeg: [UInt8]) -> (width: Int, height: Int)? {
        var i = 2
        while i + 8 < jpeg.count, jpeg[i] == 0xFF {
            let marker = jpeg[i + 1]
            if marker == 0xFF { i += 1; continue }  // fill byte
            if (0xD0...0xD7).contains(marker) || marker == 0x01 { i += 2; continue }  // no length
            if (0xC0...0xCF).contains(marker) && ![0xC4, 0xC8, 0xCC].contains(marker) {
                return (Int(jpeg[i + 7]) << 8 | Int(jpeg[i + 8]), Int(jpeg[i + 5]) << 8 | Int(jpeg[i + 6]))
            }
            i += 2 + (Int(jpeg[i + 2]) << 8 | Int(jpeg[i + 3]))
        }
        return nil
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
