// JPEG bytes checked before libturbojpeg reads them. They come from cameras (a UVC camera's
// MJPEG frame, corrupt or empty when the USB link drops data) and from files (the image
// camera): empty input is an error, not a trap on a missing base address, and a header whose
// picture would not fit is refused before anything is allocated for it.

import CTurboJPEG

enum JPEGInput {
    /// 8192 x 8192 (64 Mpx): far beyond what any camera streams as MJPEG (4K is 8.3 Mpx), and a
    /// still of a 48 Mpx phone fits; a corrupt header's 65500 x 65500 (libjpeg's own limit) would
    /// ask for 12 GiB of RGB.
    static let maxPixels = 8192 * 8192

    /// Reads the header of `jpeg` with `handle`: width, height, subsampling; refuses a picture
    /// of more than `maxPixels`.
    static func header(_ handle: tjhandle, _ jpeg: UnsafeRawBufferPointer) throws(JPEGError)
        -> (src: UnsafePointer<UInt8>, width: Int32, height: Int32, subsampling: Int32) {
        guard jpeg.count > 0, let base = jpeg.baseAddress else {
            throw JPEGError(call: "tjDecompressHeader3", message: "empty JPEG (0 bytes)")
        }
        let src = base.assumingMemoryBound(to: UInt8.self)
        var w: Int32 = 0, h: Int32 = 0, sub: Int32 = 0, cs: Int32 = 0
        guard tjDecompressHeader3(handle, src, UInt(jpeg.count), &w, &h, &sub, &cs) == 0 else {
            throw JPEGError.last("tjDecompressHeader3", handle)
        }
        guard Int(w) * Int(h) <= maxPixels else {
            throw JPEGError(call: "tjDecompressHeader3",
                            message: "the header says \(w)x\(h): more than \(maxPixels) pixels (8192x8192)")
        }
        return (src, w, h, sub)
    }
}
