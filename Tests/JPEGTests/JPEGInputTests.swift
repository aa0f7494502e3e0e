import CameraCore
import Testing
@testable import JPEG

/// What cameras and files hand the decoders is checked first: an empty frame (a UVC camera's
/// MJPEG buffer with nothing in it) and a header claiming a picture too big to allocate are
/// errors naming the call, never a trap or a 12 GiB allocation; the decoder still works after.
@Suite struct JPEGInputTests {
    static let good: [UInt8] = {
        let (w, h) = (64, 48)
        return try! JPEGRoundTripTests.halves(width: w, height: h).withUnsafeBytes {
            try JPEGEncoder().encodeYUYV($0, width: w, height: h, stride: w * 2, quality: 90)
        }
    }()

    /// `good` with its frame header (SOF0) saying `width` x `height`.
    static func claiming(width: Int, height: Int) -> [UInt8] {
        var j = good
        let sof = (0..<(j.count - 1)).first { j[$0] == 0xFF && j[$0 + 1] == 0xC0 }!
        // FFC0, length (2), precision (1), height (2), width (2)
        j[sof + 5] = UInt8(height >> 8); j[sof + 6] = UInt8(height & 0xFF)
        j[sof + 7] = UInt8(width >> 8); j[sof + 8] = UInt8(width & 0xFF)
        return j
    }

    /// Runs `decode` on `bad`, expects a JPEGError whose text has `expected`, then on `good`.
    func refusedThenFine(_ bad: [UInt8], _ expected: String,
                         _ decode: (UnsafeRawBufferPointer) throws -> Int) throws {
        do {
            _ = try bad.withUnsafeBytes { try decode($0) }
            Issue.record("accepted \(bad.count) bytes")
        } catch let e as JPEGError {
            #expect(e.description.contains(expected), "\(e)")
        }
        #expect(try Self.good.withUnsafeBytes { try decode($0) } == 64, "the next good frame decodes")
    }

    @Test(arguments: [("empty", [UInt8]()), ("huge", claiming(width: 60000, height: 60000))])
    func everyDecoderRefusesAndRecovers(_ c: (String, [UInt8])) throws {
        let expected = c.0 == "empty" ? "empty JPEG" : "60000x60000: more than"
        let recoder = try JPEGRecoder(), encoder = try JPEGEncoder()
        try refusedThenFine(c.1, expected) {
            try JPEGDecoder.size(of: try recoder.recode($0, with: encoder, quality: 80, transform: FrameTransform(zoom: 2)).jpeg).width
        }
        let transformer = try JPEGTransformer()
        try refusedThenFine(c.1, expected) { try transformer.apply($0, FrameTransform(rotation: 180)).width }
        let luma = try LumaDecoder()
        try refusedThenFine(c.1, expected) { try luma.decode($0, maxWidth: 640) { _, w, _ in w } }
        try refusedThenFine(c.1, expected) { try JPEGDecoder.decodeRGB(Array($0)).width }
    }

    /// The limit is the picture's area: 8192 x 8192 passes the header check (and then fails to
    /// decode, the scan being 64 x 48's), one row more is refused.
    @Test func theLimitIs8192Squared() throws {
        let transformer = try JPEGTransformer()
        do {
            _ = try Self.claiming(width: 8192, height: 8193).withUnsafeBytes { try transformer.apply($0, .identity) }
            Issue.record("8192x8193 accepted")
        } catch { #expect("\(error)".contains("more than 67108864 pixels"), "\(error)") }
        do {
            _ = try Self.claiming(width: 8192, height: 8192).withUnsafeBytes { try JPEGDecoder.decodeRGB(Array($0)) }
            Issue.record("a 64x48 scan decoded as 8192x8192")
        } catch { #expect(!"\(error)".contains("more than"), "\(error)") }
    }

    /// An MJPEG frame passes through untouched only when it is a JPEG at all: an empty buffer
    /// or one without the start marker is a failed encode (the session drops it), not a part
    /// no viewer can decode.
    @Test func passThroughNeedsAJPEG() throws {
        let encoder = FrameEncoder(), format = VideoFormat(pixelFormat: .mjpeg, width: 64, height: 48, fps: 30)
        func pass(_ bytes: [UInt8]) throws -> Int {
            try bytes.withUnsafeBytes {
                try encoder.encode(RawFrame(format: format, bytes: $0, stride: 0, sequence: 1, timestamp: 0),
                                   quality: 80, transform: .identity).jpeg.count
            }
        }
        for bad in [[], [0xFF], Array(Self.good.dropFirst(2)), [UInt8](repeating: 0, count: 4096)] {
            #expect(throws: JPEGError.self, "\(bad.count) bytes") { try pass(bad) }
        }
        #expect(try pass(Self.good) == Self.good.count)
    }
}
