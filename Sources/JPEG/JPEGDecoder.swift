// Decodes JPEGs: used by the image camera (a still file served as a camera) and by tests
// that check pixels.

import CTurboJPEG

/// A decoded image in packed RGB, 3 bytes a pixel.
public struct RGBImage: Sendable, Equatable {
    public var width: Int
    public var height: Int
    public var pixels: [UInt8]

    public init(width: Int, height: Int, pixels: [UInt8]) {
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    public func pixel(x: Int, y: Int) -> (r: Int, g: Int, b: Int) {
        let i = (y * width + x) * 3
        return (Int(pixels[i]), Int(pixels[i + 1]), Int(pixels[i + 2]))
    }

    /// Mean colour of a rectangle, for tests and scene checks.
    public func mean(x: Int, y: Int, width w: Int, height h: Int) -> (r: Double, g: Double, b: Double) {
        var r = 0, g = 0, b = 0
        for yy in y..<(y + h) {
            for xx in x..<(x + w) {
                let p = pixel(x: xx, y: yy)
                r += p.r; g += p.g; b += p.b
            }
        }
        let n = Double(w * h)
        return (Double(r) / n, Double(g) / n, Double(b) / n)
    }
}

public enum JPEGDecoder {
    /// Width and height from the JPEG header, without decoding the image.
    public static func size(of jpeg: [UInt8]) throws(JPEGError) -> (width: Int, height: Int) {
        guard let h = tjInitDecompress() else { throw JPEGError.last("tjInitDecompress", nil) }
        defer { tjDestroy(h) }
        var w: Int32 = 0, ht: Int32 = 0, sub: Int32 = 0, cs: Int32 = 0
        let rc = jpeg.withUnsafeBufferPointer {
            tjDecompressHeader3(h, $0.baseAddress, UInt(jpeg.count), &w, &ht, &sub, &cs)
        }
        guard rc == 0 else { throw JPEGError.last("tjDecompressHeader3", h) }
        return (Int(w), Int(ht))
    }

    public static func decodeRGB(_ jpeg: [UInt8]) throws(JPEGError) -> RGBImage {
        guard let h = tjInitDecompress() else { throw JPEGError.last("tjInitDecompress", nil) }
        defer { tjDestroy(h) }
        let (w, ht) = try jpeg.withUnsafeBytes { bytes in
            Result { () throws(JPEGError) in try JPEGInput.header(h, bytes) }.map { ($0.width, $0.height) }
        }.get()
        var pixels = [UInt8](repeating: 0, count: Int(w) * Int(ht) * 3)
        let rc = jpeg.withUnsafeBufferPointer { src in
            pixels.withUnsafeMutableBufferPointer { dst in
                tjDecompress2(h, src.baseAddress, UInt(jpeg.count), dst.baseAddress, w, 0, ht,
                              Int32(TJPF_RGB.rawValue), 0)
            }
        }
        guard rc == 0 else { throw JPEGError.last("tjDecompress2", h) }
        return RGBImage(width: Int(w), height: Int(ht), pixels: pixels)
    }
}
