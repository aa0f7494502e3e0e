import CameraCore
import Testing
@testable import JPEG

/// Every raw format through `JPEGEncoder.encode` with every kind of transform: decoded
/// pixels must show the test picture turned, mirrored and cropped as asked.
@Suite struct RawFormatTests {
    static let raw = PixelFormat.allCases.filter { $0 != .mjpeg }
    static let transforms: [FrameTransform] = [
        .identity, FrameTransform(rotation: 90), FrameTransform(rotation: 180), FrameTransform(rotation: 270),
        FrameTransform(mirrored: true), FrameTransform(zoom: 2), FrameTransform(zoom: 1.5, rotation: 90, mirrored: true),
        // Digital pan: a crop about a point, stopped at the frame's edge (bottom-left), and
        // about a point in the sensor's coordinates while the output is turned.
        FrameTransform(zoom: 2, center: Point(x: 0.1, y: 0.9)), FrameTransform(zoom: 2, rotation: 90, center: Point(x: 0.7, y: 0.3)),
    ]
    static let (width, height) = (128, 96)

    static func encode(_ f: PixelFormat, _ t: FrameTransform, width w: Int = width, height h: Int = height) throws -> EncodedImage {
        let (bytes, stride) = TestPicture.frame(f, width: w, height: h)
        return try bytes.withUnsafeBytes {
            try JPEGEncoder().encode($0, format: f, width: w, height: h, stride: stride, quality: 95, transform: t)
        }
    }

    @Test(arguments: raw, transforms)
    func theTransformedPictureIsWhereItShouldBe(_ f: PixelFormat, _ t: FrameTransform) throws {
        let out = try Self.encode(f, t)
        let turned = t.rotation == 90 || t.rotation == 270
        #expect((out.width, out.height) == (turned ? (96, 128) : (128, 96)), "reported size")
        let image = try JPEGDecoder.decodeRGB(out.jpeg)
        #expect(image.width == out.width && image.height == out.height, "decoded size")
        // Sample a 9x9 grid of 6x6-pixel windows; skip a window whose surroundings (8 output
        // pixels each way) are not one colour in the expected picture, i.e. near an edge.
        var checked = 0
        let tolerance = f == .grey ? 16.0 : 40.0
        for gy in 1...9 {
            for gx in 1...9 {
                let (u, v) = (Double(gx) / 10, Double(gy) / 10)
                let du = 8 / Double(image.width), dv = 8 / Double(image.height)
                let corners = [(u - du, v - dv), (u + du, v - dv), (u - du, v + dv), (u + du, v + dv), (u, v)].map {
                    let p = TestPicture.source(u: $0.0, v: $0.1, t)
                    return TestPicture.colour(x: p.x, y: p.y)
                }
                guard corners.allSatisfy({ $0 == corners[0] }) else { continue }
                var want = corners[0]
                if f == .grey { let y = Int(TestPicture.ycbcr(want).y); want = (y, y, y) }
                let px = Int(u * Double(image.width)) - 3, py = Int(v * Double(image.height)) - 3
                let got = image.mean(x: px, y: py, width: 6, height: 6)
                let ok = abs(got.r - Double(want.r)) < tolerance && abs(got.g - Double(want.g)) < tolerance
                    && abs(got.b - Double(want.b)) < tolerance
                #expect(ok, "\(f.rawValue) \(t) at (\(u), \(v)): got \(got), want \(want)")
                checked += 1
            }
        }
        #expect(checked >= 30, "enough of the grid is away from edges: \(checked)")
    }

    /// The cases spelled out: a quarter turn clockwise puts the top-left quadrant top-right,
    /// and zoom 2 makes the centre block (an eighth each way from the centre) fill the
    /// middle half of the frame.
    @Test(arguments: raw)
    func quarterTurnAndZoomByName(_ f: PixelFormat) throws {
        let turned = try JPEGDecoder.decodeRGB(try Self.encode(f, FrameTransform(rotation: 90)).jpeg)
        let topRight = turned.mean(x: 70, y: 10, width: 16, height: 16)
        let topLeft = turned.mean(x: 10, y: 10, width: 16, height: 16)
        if f == .grey {
            #expect(abs(topRight.r - 76) < 16 && abs(topLeft.r - 29) < 16, "red's luma top-right, blue's top-left")
        } else {
            #expect(topRight.r > 200 && topRight.g < 50 && topRight.b < 50, "red now top-right: \(topRight)")
            #expect(topLeft.b > 200 && topLeft.r < 50, "blue (bottom-left) now top-left: \(topLeft)")
        }
        let zoomed = try JPEGDecoder.decodeRGB(try Self.encode(f, FrameTransform(zoom: 2)).jpeg)
        let inner = zoomed.mean(x: 40, y: 30, width: 8, height: 8)  // (0.31, 0.31): outside the block unzoomed
        let plain = try JPEGDecoder.decodeRGB(try Self.encode(f, .identity).jpeg).mean(x: 40, y: 30, width: 8, height: 8)
        if f == .grey {
            #expect(abs(inner.r - 226) < 16 && abs(plain.r - 76) < 16, "yellow's luma when zoomed, red's when not")
        } else {
            #expect(inner.r > 200 && inner.g > 200 && inner.b < 60, "yellow fills more when zoomed: \(inner)")
            #expect(plain.r > 200 && plain.g < 60, "red there without zoom: \(plain)")
        }
    }

    /// The raw entry point leaves the benchmarked YUYV path alone: same bytes as encodeYUYV.
    @Test func yuyvIdentityIsTheSameBytesAsEncodeYUYV() throws {
        for (w, h) in [(128, 96), (640, 480)] {
            let (bytes, stride) = TestPicture.frame(.yuyv, width: w, height: h, padding: 0)
            let encoder = try JPEGEncoder()
            let viaEncode = try bytes.withUnsafeBytes { try encoder.encode($0, format: .yuyv, width: w, height: h, stride: stride, quality: 80) }
            let direct = try bytes.withUnsafeBytes { try JPEGEncoder().encodeYUYV($0, width: w, height: h, stride: stride, quality: 80) }
            #expect(viaEncode.jpeg == direct && viaEncode.width == w && viaEncode.height == h)
        }
    }

    /// Untransformed and transformed paths agree on the picture for odd sizes too (4:2:0
    /// with an odd height goes through the gather even without a transform).
    @Test(arguments: [PixelFormat.nv12, .yu12, .rgb565, .bgr24])
    func oddHeightsEncode(_ f: PixelFormat) throws {
        let out = try Self.encode(f, FrameTransform(rotation: 270), width: 64, height: 47)
        #expect((out.width, out.height) == (47, 64))
        let plain = try Self.encode(f, .identity, width: 64, height: 47)
        #expect(try JPEGDecoder.size(of: plain.jpeg) == (64, 47) ? true : false)
    }

    @Test func shortFramesAndMJPEGAreErrorsNotCrashes() throws {
        let encoder = try JPEGEncoder()
        let short = [UInt8](repeating: 0, count: 100)
        for f in Self.raw {
            #expect(throws: JPEGError.self) {
                try short.withUnsafeBytes { try encoder.encode($0, format: f, width: 64, height: 48, stride: 64 * 3, quality: 80) }
            }
        }
        #expect(throws: JPEGError.self) {
            try short.withUnsafeBytes { try encoder.encode($0, format: .mjpeg, width: 8, height: 8, stride: 0, quality: 80) }
        }
        let narrow = [UInt8](repeating: 0, count: 64 * 48 * 2)
        #expect(throws: JPEGError.self, "a stride shorter than a row") {
            try narrow.withUnsafeBytes { try encoder.encode($0, format: .yuyv, width: 64, height: 48, stride: 64, quality: 80) }
        }
    }
}
