// A camera frame to a JPEG, each format by its cheapest honest path: raw formats are
// gathered (zoom, rotation, mirror applied) and compressed; MJPEG passes through untouched,
// is turned losslessly (rotation, mirror), or decoded and encoded again (digital zoom).
// One per thread that encodes: it owns its libjpeg-turbo handles.

import CameraCore

public final class FrameEncoder {
    private var encoder: JPEGEncoder?
    private var transformer: JPEGTransformer?
    private var recoder: JPEGRecoder?

    public init() {}

    /// The frame as a JPEG at `quality` through `transform`; `.s420` halves the chroma rows
    /// of what it encodes (a camera's own JPEG stays as the camera made it). With `framing`
    /// the result is the wire part around the JPEG, made by the copy that takes the JPEG out
    /// of libturbojpeg (or, passed through, out of the frame).
    public func encode(_ frame: borrowing RawFrame, quality: Int, transform: FrameTransform,
                       subsampling: ChromaSubsampling = .s422, framing: JPEGFraming? = nil) throws(JPEGError) -> EncodedImage {
        if encoder == nil { encoder = try JPEGEncoder() }
        encoder!.subsampling = subsampling
        encoder!.framing = framing
        defer { encoder!.framing = nil }
        let f = frame.format
        switch f.pixelFormat {
        case .mjpeg where transform.isIdentity:
            // Already JPEG, passed on as it is; but not an empty buffer or one without a JPEG's
            // start marker: viewers would get a part no decoder reads. (V4L2Stream rejects such
            // frames before they get here; this holds for every other source of MJPEG.) It is
            // a broken frame, dropped like any that fails.
            guard frame.bytes.count >= 4, frame.bytes[0] == 0xFF, frame.bytes[1] == 0xD8 else {
                throw JPEGError(call: "MJPEG frame", message: "\(frame.bytes.count) bytes without a JPEG start marker (FF D8)")
            }
            return Self.image(frame.bytes, framing, width: f.width, height: f.height)
        case .mjpeg where transform.zoom > 1.0001:
            // Digital zoom keeps the frame's size, as on every format: decode, crop, encode.
            if recoder == nil { recoder = try JPEGRecoder() }
            return try recoder!.recode(frame.bytes, with: encoder!, quality: quality, transform: transform)
        case .mjpeg:
            // Rotation and mirroring alone stay lossless: no decode, no re-encode.
            if transformer == nil { transformer = try JPEGTransformer() }
            let t = try transformer!.apply(frame.bytes, transform)
            guard let framing else { return EncodedImage(jpeg: t.jpeg, width: t.width, height: t.height) }
            return t.jpeg.withUnsafeBytes { Self.image($0, framing, width: t.width, height: t.height) }  // a second copy: tjTransform allocates its own output
        default:
            // Every raw format; zoom and orientation are applied while it is gathered.
            return try encoder!.encode(frame.bytes, format: f.pixelFormat, width: f.width, height: f.height,
                                       stride: frame.stride, quality: quality, transform: transform)
        }
    }

    private static func image(_ jpeg: UnsafeRawBufferPointer, _ framing: JPEGFraming?, width: Int, height: Int) -> EncodedImage {
        guard let framing else { return EncodedImage(jpeg: Array(jpeg), width: width, height: height) }
        let (bytes, range) = framing.wrap(jpeg)
        return EncodedImage(bytes: bytes, jpegRange: range, width: width, height: height)
    }
}
