import CameraCore
import Testing
@testable import JPEG

/// YUYV → JPEG → RGB: the encoder keeps size and colours.
@Suite struct JPEGRoundTripTests {
    /// Left half pure red, right half pure blue, in full-range YCbCr as packed YUYV.
    static func halves(width: Int, height: Int) -> [UInt8] {
        // JFIF: red = (76, 85, 255), blue = (29, 255, 107)
        var out = [UInt8](repeating: 0, count: width * height * 2)
        for y in 0..<height {
            for x in stride(from: 0, to: width, by: 2) {
                let (yy, u, v): (UInt8, UInt8, UInt8) = x < width / 2 ? (76, 85, 255) : (29, 255, 107)
                let i = (y * width + x) * 2
                out[i] = yy; out[i + 1] = u; out[i + 2] = yy; out[i + 3] = v
            }
        }
        return out
    }

    @Test(arguments: [(64, 48), (320, 240), (1280, 720)])
    func sizeAndColoursSurvive(_ size: (Int, Int)) throws {
        let (w, h) = size
        let encoder = try JPEGEncoder()
        let jpeg = try Self.halves(width: w, height: h).withUnsafeBytes {
            try encoder.encodeYUYV($0, width: w, height: h, stride: w * 2, quality: 90)
        }
        #expect(jpeg.prefix(2) == [0xFF, 0xD8] && jpeg.suffix(2) == [0xFF, 0xD9])
        let image = try JPEGDecoder.decodeRGB(jpeg)
        #expect(image.width == w && image.height == h)
        let left = image.mean(x: 4, y: 4, width: w / 4, height: h / 2)
        let right = image.mean(x: w - 4 - w / 4, y: 4, width: w / 4, height: h / 2)
        #expect(left.r > 230 && left.g < 25 && left.b < 25, "left \(left)")
        #expect(right.b > 230 && right.r < 25 && right.g < 25, "right \(right)")
    }

    @Test func encoderReusesItsBuffersAcrossSizes() throws {
        let encoder = try JPEGEncoder()
        for (w, h) in [(640, 480), (64, 48), (1280, 720), (640, 480)] {
            let jpeg = try Self.halves(width: w, height: h).withUnsafeBytes {
                try encoder.encodeYUYV($0, width: w, height: h, stride: w * 2, quality: 80)
            }
            let size = try JPEGDecoder.size(of: jpeg)
            #expect(size.width == w && size.height == h)
        }
    }

    @Test func qualityChangesSize() throws {
        let encoder = try JPEGEncoder()
        var frame = Self.halves(width: 320, height: 240)
        for i in stride(from: 0, to: frame.count, by: 2) { frame[i] = UInt8(truncatingIfNeeded: i * 7 % 251) }  // texture
        let low = try frame.withUnsafeBytes { try encoder.encodeYUYV($0, width: 320, height: 240, stride: 640, quality: 20) }
        let high = try frame.withUnsafeBytes { try encoder.encodeYUYV($0, width: 320, height: 240, stride: 640, quality: 95) }
        #expect(high.count > low.count)
    }

    @Test func nv12AndRGBEncodeWithTheirColours() throws {
        let w = 64, h = 48
        // NV12: Y then interleaved UV; left half red, right half blue (JFIF values).
        var nv12 = [UInt8](repeating: 0, count: w * h * 3 / 2)
        for y in 0..<h { for x in 0..<w { nv12[y * w + x] = x < w / 2 ? 76 : 29 } }
        for y in 0..<(h / 2) { for x in 0..<(w / 2) {
            let i = w * h + y * w + x * 2
            (nv12[i], nv12[i + 1]) = x < w / 4 ? (85, 255) : (255, 107)
        } }
        let encoder = try JPEGEncoder()
        let a = try JPEGDecoder.decodeRGB(nv12.withUnsafeBytes { try encoder.encodeNV12($0, width: w, height: h, stride: w, quality: 95) })
        #expect(a.width == w && a.mean(x: 2, y: 2, width: 12, height: 40).r > 220 && a.mean(x: 50, y: 2, width: 12, height: 40).b > 220)
        var rgb = [UInt8](repeating: 0, count: w * h * 3)
        for y in 0..<h { for x in 0..<w { let i = (y * w + x) * 3; rgb[i + (x < w / 2 ? 0 : 2)] = 255 } }
        let b = try JPEGDecoder.decodeRGB(rgb.withUnsafeBytes { try encoder.encodeRGB($0, width: w, height: h, stride: w * 3, quality: 95) })
        #expect(b.height == h && b.mean(x: 2, y: 2, width: 12, height: 40).r > 220 && b.mean(x: 50, y: 2, width: 12, height: 40).b > 220)
    }

    @Test func losslessTransformsOfCameraJPEGs() throws {
        let (w, h) = (320, 240)
        let jpeg = try Self.halves(width: w, height: h).withUnsafeBytes {
            try JPEGEncoder().encodeYUYV($0, width: w, height: h, stride: w * 2, quality: 90)
        }
        let t = try JPEGTransformer()
        func apply(_ j: [UInt8], _ x: FrameTransform) throws -> (jpeg: [UInt8], width: Int, height: Int) {
            try j.withUnsafeBytes { try t.apply($0, x) }
        }
        let turned = try apply(jpeg, FrameTransform(rotation: 90))
        #expect(turned.width == 240 && turned.height == 320)
        let top = try JPEGDecoder.decodeRGB(turned.jpeg).mean(x: 40, y: 10, width: 160, height: 40)
        #expect(top.r > 220, "clockwise: the red left half is now on top")
        // Four quarter turns give back the very same pixels: nothing was re-encoded.
        var j = jpeg
        for _ in 0..<4 { j = try apply(j, FrameTransform(rotation: 90)).jpeg }
        #expect(try JPEGDecoder.decodeRGB(j) == JPEGDecoder.decodeRGB(jpeg))
        let mirrored = try JPEGDecoder.decodeRGB(try apply(jpeg, FrameTransform(mirrored: true)).jpeg)
        #expect(mirrored.mean(x: 4, y: 4, width: 60, height: 100).b > 220, "mirrored: blue on the left")
        let zoomed = try apply(jpeg, FrameTransform(zoom: 2))
        #expect(zoomed.width == 160 && zoomed.height == 120, "a centre crop on MCU boundaries")
        // Digital pan: the crop about a point in the sensor's coordinates, turned or not —
        // about the right half it is all blue, about the left all red.
        for (center, rotation, blue) in [(Point(x: 0.9, y: 0.5), 0, true), (Point(x: 0.1, y: 0.2), 0, false),
                                         (Point(x: 0.9, y: 0.5), 90, true), (Point(x: 0.2, y: 0.9), 270, false)] {
            let panned = try apply(jpeg, FrameTransform(zoom: 2, rotation: rotation, center: center))
            let m = try JPEGDecoder.decodeRGB(panned.jpeg).mean(x: 0, y: 0, width: panned.width, height: panned.height)
            #expect(blue ? m.b > 200 && m.r < 40 : m.r > 200 && m.b < 40, "\(center) turned \(rotation): \(m)")
        }
    }

    /// Found by Fuzz/FuzzTransform: libturbojpeg 2.1 leaves a handle whose header read failed
    /// unable to read any later header, so one truncated camera frame failed every frame after
    /// it on that encode thread (rotation, digital zoom) and every metadata scan.
    @Test func aCorruptFrameDoesNotStopTheFramesAfterIt() throws {
        let (w, h) = (64, 48)
        let jpeg = try Self.halves(width: w, height: h).withUnsafeBytes {
            try JPEGEncoder().encodeYUYV($0, width: w, height: h, stride: w * 2, quality: 90)
        }
        let truncated = Array(jpeg.prefix(200))  // inside the Huffman tables
        let transformer = try JPEGTransformer(), recoder = try JPEGRecoder(), encoder = try JPEGEncoder()
        let luma = try LumaDecoder()
        for _ in 0..<2 {
            #expect(throws: JPEGError.self) { try truncated.withUnsafeBytes { try transformer.apply($0, FrameTransform(rotation: 90)) } }
            let turned = try jpeg.withUnsafeBytes { try transformer.apply($0, FrameTransform(rotation: 90)) }
            #expect(turned.width == h && turned.height == w)
            #expect(throws: JPEGError.self) {
                try truncated.withUnsafeBytes { try recoder.recode($0, with: encoder, quality: 80, transform: FrameTransform(zoom: 2)) }
            }
            let zoomed = try jpeg.withUnsafeBytes { try recoder.recode($0, with: encoder, quality: 80, transform: FrameTransform(zoom: 2)) }
            #expect(zoomed.width == w && zoomed.height == h)
            #expect(throws: JPEGError.self) { try truncated.withUnsafeBytes { try luma.decode($0, maxWidth: 64) { _, _, _ in } } }
            let size = try jpeg.withUnsafeBytes { try luma.decode($0, maxWidth: 64) { _, w, h in (w, h) } }
            #expect(size == (w, h))
        }
    }

    @Test func corruptDataIsAnError() {
        #expect(throws: JPEGError.self) { try JPEGDecoder.decodeRGB([0xFF, 0xD8, 0, 1, 2]) }
    }
}
