import CPixels
import Testing

/// The vector de-interleaves write exactly what the plain loop writes, for every packed
/// 4:2:2 order, widths that are and are not a multiple of the vector step, and padded rows.
@Suite struct PixelSplitTests {
    func bytes(_ n: Int, seed: UInt64) -> [UInt8] {
        var x = seed
        return (0..<n).map { _ in x = x &* 6364136223846793005 &+ 1442695040888963407; return UInt8(truncatingIfNeeded: x >> 56) }
    }

    @Test(arguments: [2, 30, 32, 34, 64, 66, 1282, 1920])
    func packed422MatchesThePlainLoop(width: Int) {
        let rows = 3, pitch = width * 2 + 6
        let src = bytes(pitch * rows, seed: UInt64(width))
        for (yo, uo, vo) in [(0, 1, 3), (1, 0, 2), (0, 3, 1)] {
            var y = [UInt8](repeating: 0, count: width * rows), u = [UInt8](repeating: 0, count: width / 2 * rows)
            var v = u
            vf_split_packed422(src, pitch, Int32(width), Int32(rows), Int32(yo), Int32(uo), Int32(vo), &y, &u, &v)
            var ey = y, eu = u, ev = v
            for r in 0..<rows {
                for x in stride(from: 0, to: width, by: 2) {
                    let p = r * pitch + x * 2
                    ey[r * width + x] = src[p + yo]; ey[r * width + x + 1] = src[p + yo + 2]
                    eu[r * width / 2 + x / 2] = src[p + uo]; ev[r * width / 2 + x / 2] = src[p + vo]
                }
            }
            #expect(y == ey && u == eu && v == ev, "width \(width), offsets \(yo) \(uo) \(vo)")
        }
    }

    @Test(arguments: [1, 15, 16, 17, 640, 961])
    func uvMatchesThePlainLoop(pairs: Int) {
        let rows = 2, stride = pairs * 2 + 4
        let src = bytes(stride * rows, seed: UInt64(pairs))
        var u = [UInt8](repeating: 0, count: pairs * rows), v = u
        vf_split_uv(src, stride, Int32(pairs), Int32(rows), &u, &v)
        #expect(u == (0..<(pairs * rows)).map { src[($0 / pairs) * stride + ($0 % pairs) * 2] })
        #expect(v == (0..<(pairs * rows)).map { src[($0 / pairs) * stride + ($0 % pairs) * 2 + 1] })
    }
}

import CameraCore
import JPEG

/// `stream.subsampling` "420": 4:2:2 and RGB sources come out 4:2:0, on the direct and the
/// transformed paths; the picture keeps its colours.
@Suite struct ChromaSubsamplingTests {
    /// libjpeg-turbo's name for the JPEG's subsampling (tjDecompressHeader3), through the
    /// SOF's sampling factors: 0x21 for Y at 2×1 (4:2:2), 0x22 at 2×2 (4:2:0).
    func lumaSampling(_ jpeg: [UInt8]) -> UInt8? {
        for i in 0..<(jpeg.count - 12) where jpeg[i] == 0xFF && (jpeg[i + 1] == 0xC0 || jpeg[i + 1] == 0xC1) {
            return jpeg[i + 11]  // FF C0, length(2), precision, height(2), width(2), components, id, sampling
        }
        return nil
    }

    @Test(arguments: [PixelFormat.yuyv, .uyvy, .nv16, .rgb24])
    func fourTwoTwoSourcesComeOutFourTwoZero(_ format: PixelFormat) throws {
        let (w, h) = (64, 48)
        let stride = format.bytesPerLine(width: w)!
        let frame = [UInt8](repeating: 120, count: format.frameBytes(width: w, height: h)!)
        let encoder = try JPEGEncoder()
        for (transform, label) in [(FrameTransform.identity, "direct"), (FrameTransform(rotation: 90), "turned")] {
            encoder.subsampling = .s422
            let full = try frame.withUnsafeBytes { try encoder.encode($0, format: format, width: w, height: h, stride: stride, quality: 80, transform: transform) }
            encoder.subsampling = .s420
            let half = try frame.withUnsafeBytes { try encoder.encode($0, format: format, width: w, height: h, stride: stride, quality: 80, transform: transform) }
            #expect(lumaSampling(full.jpeg) == 0x21, "\(format) \(label) 4:2:2")
            #expect(lumaSampling(half.jpeg) == 0x22, "\(format) \(label) 4:2:0")
            let decoded = try JPEGDecoder.decodeRGB(half.jpeg)
            #expect((decoded.width, decoded.height) == (transform.rotation == 90 ? (h, w) : (w, h)))
        }
    }
}
