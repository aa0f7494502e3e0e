// An MJPEG frame's brightness alone, for the metadata output: libjpeg-turbo decodes to
// greyscale, scaled down by its DCT scaling when the frame is wider than asked. One owner:
// the metadata worker (it owns a decompressor and a reusable plane).

import CTurboJPEG

public final class LumaDecoder {
    private var handle: tjhandle
    private var plane: [UInt8] = []

    public init() throws(JPEGError) {
        guard let h = tjInitDecompress() else { throw JPEGError.last("tjInitDecompress", nil) }
        handle = h
    }

    deinit { tjDestroy(handle) }

    /// The error, and a fresh handle: one whose header read failed reads no later header
    /// (libturbojpeg 2.1), so one corrupt frame would stop every scan after it.
    private func failed(_ call: String) -> JPEGError {
        let error = JPEGError.last(call, handle)
        renew()
        return error
    }

    private func renew() {
        if let fresh = tjInitDecompress() { tjDestroy(handle); handle = fresh }
    }

    /// Decodes `jpeg` to 8-bit luma no wider than `maxWidth` (halved until it fits) and
    /// hands the plane to `body`, valid during the call.
    public func decode<T>(_ jpeg: UnsafeRawBufferPointer, maxWidth: Int,
                          _ body: (UnsafeRawBufferPointer, _ width: Int, _ height: Int) -> T) throws(JPEGError) -> T {
        let src: UnsafePointer<UInt8>, w: Int32, h: Int32
        do throws(JPEGError) { (src, w, h, _) = try JPEGInput.header(handle, jpeg) } catch { renew(); throw error }
        var (ow, oh) = (Int(w), Int(h))
        while ow > maxWidth && ow > 1 { (ow, oh) = ((ow + 1) / 2, (oh + 1) / 2) }  // 1/2, 1/4, 1/8: scales libjpeg-turbo has
        if plane.count < ow * oh { plane = [UInt8](repeating: 0, count: ow * oh) }
        let rc = plane.withUnsafeMutableBufferPointer {
            tjDecompress2(handle, src, UInt(jpeg.count), $0.baseAddress, Int32(ow), Int32(ow), Int32(oh),
                          Int32(TJPF_GRAY.rawValue), TJFLAG_FASTDCT)
        }
        guard rc == 0 else { throw failed("tjDecompress2") }
        return plane.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[..<(ow * oh)]), ow, oh) }
    }
}
