// libFuzzer target: MJPEG's lossless rotation, mirroring and crop (JPEGTransformer), from
// the parameters handed to tjTransform to the transform itself.
//
// Input: byte 0 picks the mode, then
//  0: plan — width, height (2 bytes each), subsampling, rotation, mirror, zoom: the tjTransform
//     parameters JPEGTransformer.plan computes, for any size and transform;
//  1: fixture — one of the small committed camera frames (Fuzz/Fixtures, every libjpeg
//     subsampling, MCU-aligned and not) through apply with a fuzzed transform;
//  2: bytes — the rest of the input as a camera's JPEG, through apply, through the zoom's
//     decode and re-encode (JPEGRecoder) and the metadata output's luma decode (LumaDecoder);
//     the header's size check (JPEGInput) stands before every allocation they make. (Pictures
//     over 1 Mpx skip the two full decodes: they only slow the run; the unit tests cover the cap.)
//
// Invariants beyond "no crash":
//  - The operation is the one rotation+mirror names; 90°/270° swap width and height.
//  - A crop (zoom > 1) lies inside the image, starts on an MCU boundary, is a whole number
//    of MCUs (or the whole, sub-MCU, side), is not empty and is centred to within an MCU.
//  - On the fixtures apply succeeds, its output decodes at the size it reports, which is the
//    crop's size or the turned size less at most one partial MCU (TJXOPT_TRIM); on aligned
//    frames, the inverse transform gives back exactly the original pixels.

import CameraCore
import Foundation
import JPEG

private struct Bytes {
    var data: ArraySlice<UInt8>
    mutating func u8() -> UInt8 { data.popFirst() ?? 0 }
    mutating func u16() -> Int { Int(u8()) << 8 | Int(u8()) }
    mutating func u64() -> UInt64 { (0..<8).reduce(0) { acc, _ in acc << 8 | UInt64(u8()) } }
}

// TJSAMP_444 0, 422 1, 420 2, GRAY 3, 440 4, 411 5; -1 unknown.
private let mcuOf: [Int32: (Int, Int)] = [0: (8, 8), 1: (16, 8), 2: (16, 16), 3: (8, 8), 4: (8, 16), 5: (32, 8)]
// TJXOP_NONE 0, HFLIP 1, VFLIP 2, TRANSPOSE 3, TRANSVERSE 4, ROT90 5, ROT180 6, ROT270 7.
private let expectedOp: [String: Int32] = ["0f": 0, "90f": 5, "180f": 6, "270f": 7, "0t": 1, "90t": 3, "180t": 2, "270t": 4]

private func transform(_ b: inout Bytes) -> FrameTransform {
    let r = b.u8()
    let rotation: Int
    switch r % 8 {
    case 0, 1, 2, 3: rotation = Int(r % 4) * 90
    case 4: rotation = Int(Int32(truncatingIfNeeded: b.u64()))
    default: rotation = [0, 90, 180, 270][Int(r >> 3) % 4]
    }
    let mirrored = b.u8() & 1 == 1
    let z = b.u8()
    let zoom: Double
    switch z % 4 {
    case 0: zoom = 1
    case 1: zoom = Double(bitPattern: b.u64())
    default: zoom = 1 + Double(z >> 2) / 8
    }
    return FrameTransform(zoom: zoom, rotation: rotation, mirrored: mirrored)
}

private func checkPlan(width w: Int, height h: Int, sub: Int32, _ t: FrameTransform) -> JPEGTransformer.Plan {
    let p = JPEGTransformer.plan(width: w, height: h, subsampling: sub, transform: t)
    // A rotation other than the four (the API refuses them) leaves the frame as it is.
    let op = [0, 90, 180, 270].contains(t.rotation) ? expectedOp["\(t.rotation)\(t.mirrored ? "t" : "f")"]! : 0
    precondition(p.operation == op, "operation \(p.operation) for \(t)")
    let turned = t.rotation == 90 || t.rotation == 270
    let (W, H) = turned ? (h, w) : (w, h)
    // tjTransform wants the crop's origin on the source's MCU grid (tjMCUWidth[subsamp]),
    // libjpeg's transupp on the output's iMCU grid; the size in output MCUs (or a whole side).
    let (mw0, mh0) = mcuOf[sub] ?? (16, 16)
    let (ow, oh) = turned ? (mh0, mw0) : (mw0, mh0)
    let (mw, mh) = turned ? (max(mw0, mh0), max(mw0, mh0)) : (mw0, mh0)
    precondition(p.mcuWidth == mw && p.mcuHeight == mh, "MCU \(p.mcuWidth)x\(p.mcuHeight) for subsampling \(sub), \(t)")
    guard t.zoom > 1.0001, sub >= 0 else {
        precondition(p.crop == nil && p.width == W && p.height == H, "\(p) for \(w)x\(h) \(t)")
        return p
    }
    guard let c = p.crop else { preconditionFailure("no crop for zoom \(t.zoom)") }
    let context = "crop \(c) of \(W)x\(H) (MCU \(mw)x\(mh)) for \(w)x\(h) sub \(sub) \(t)"
    precondition(c.width > 0 && c.height > 0, "empty " + context)
    precondition(c.x >= 0 && c.y >= 0 && c.x + c.width <= W && c.y + c.height <= H, "outside the image: " + context)
    precondition(c.x % mw0 == 0 && c.y % mh0 == 0 && c.x % ow == 0 && c.y % oh == 0, "origin not on an MCU: " + context)
    precondition((c.width % ow == 0 || c.width == W) && (c.height % oh == 0 || c.height == H), "not whole MCUs: " + context)
    precondition(abs((W - c.width) / 2 - c.x) < mw && abs((H - c.height) / 2 - c.y) < mh, "not centred: " + context)
    precondition(p.width == c.width && p.height == c.height)
    return p
}

private struct Fixture {
    let name: String
    let jpeg: [UInt8]
    let width: Int, height: Int, sub: Int32
    let pixels: RGBImage
}

private let fixtures: [Fixture] = {
    let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fixtures").standardized
    let names = ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { $0.hasSuffix(".jpg") }.sorted()
    precondition(!names.isEmpty, "no fixtures in \(dir.path)")
    let subs: [String: Int32] = ["444": 0, "422": 1, "420": 2, "gray": 3, "440": 4, "411": 5]
    return names.map { n in
        let jpeg = [UInt8](FileManager.default.contents(atPath: dir.appendingPathComponent(n).path)!)
        let size = try! JPEGDecoder.size(of: jpeg)
        return Fixture(name: n, jpeg: jpeg, width: size.width, height: size.height,
                       sub: subs[String(n.split(separator: "-")[0])]!, pixels: try! JPEGDecoder.decodeRGB(jpeg))
    }
}()

nonisolated(unsafe) private let transformer = try! JPEGTransformer()
nonisolated(unsafe) private let recoder = try! JPEGRecoder()
nonisolated(unsafe) private let encoder = try! JPEGEncoder()
nonisolated(unsafe) private let luma = try! LumaDecoder()

/// The frame size in the first SOF marker, read here independently of libturbojpeg.
private func sofSize(_ j: [UInt8]) -> (width: Int, height: Int)? {
    guard j.count > 4, j[0] == 0xFF, j[1] == 0xD8 else { return nil }
    var i = 2
    while i + 9 <= j.count {
        guard j[i] == 0xFF else { return nil }
        let m = j[i + 1]
        if m == 0xFF { i += 1; continue }
        if (0xD0...0xD7).contains(m) || m == 0x01 { i += 2; continue }
        if [0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF].contains(m) {
            return (Int(j[i + 7]) * 256 + Int(j[i + 8]), Int(j[i + 5]) * 256 + Int(j[i + 6]))
        }
        i += 2 + Int(j[i + 2]) * 256 + Int(j[i + 3])
    }
    return nil
}

private func apply(_ jpeg: [UInt8], _ t: FrameTransform) throws -> (jpeg: [UInt8], width: Int, height: Int) {
    try jpeg.withUnsafeBytes { b in try transformer.apply(b, t) }
}

private func checkFixture(_ f: Fixture, _ t0: FrameTransform) {
    var t = t0
    if ![0, 90, 180, 270].contains(t.rotation) { t.rotation = 0 }
    let p = checkPlan(width: f.width, height: f.height, sub: f.sub, t)
    let out: (jpeg: [UInt8], width: Int, height: Int)
    do { out = try apply(f.jpeg, t) } catch { preconditionFailure("\(f.name) \(t): \(error)") }
    guard let decoded = sofSize(out.jpeg) else { preconditionFailure("\(f.name) \(t): no SOF in the output") }
    precondition(decoded == (out.width, out.height), "\(f.name) \(t): reports \(out.width)x\(out.height), is \(decoded)")
    do { _ = try JPEGDecoder.size(of: out.jpeg) } catch {
        // libturbojpeg names no "1x4" sampling: 4:1:1 turned by 90° is a valid JPEG it cannot decode.
        precondition(f.sub == 5 && (t.rotation == 90 || t.rotation == 270), "\(f.name) \(t): output does not decode: \(error)")
    }
    let turned = t.rotation == 90 || t.rotation == 270
    if let c = p.crop {
        // Exactly the crop, except a whole side shorter than the grid: TJXOPT_TRIM may cut its
        // partial MCU as on an uncropped image.
        let (W, H) = turned ? (f.height, f.width) : (f.width, f.height)
        let okW = out.width == c.width || (c.width == W && out.width <= W && out.width > W - p.mcuWidth)
        let okH = out.height == c.height || (c.height == H && out.height <= H && out.height > H - p.mcuHeight)
        precondition(okW && okH, "\(f.name) \(t): \(out.width)x\(out.height), crop \(p)")
    } else {
        precondition(out.width <= p.width && out.width > p.width - p.mcuWidth && out.height <= p.height
                     && out.height > p.height - p.mcuHeight, "\(f.name) \(t): \(out.width)x\(out.height) from \(p)")
    }
    // Lossless: on a frame of whole MCUs the inverse gives back the very same pixels.
    let aligned = f.width % p.mcuWidth == 0 && f.height % p.mcuHeight == 0 && f.width % p.mcuHeight == 0 && f.height % p.mcuWidth == 0
    if aligned && p.crop == nil {
        let inverse = FrameTransform(zoom: 1, rotation: t.mirrored ? t.rotation : (360 - t.rotation) % 360, mirrored: t.mirrored)
        do {
            let back = try JPEGDecoder.decodeRGB(apply(out.jpeg, inverse).jpeg)
            precondition(back == f.pixels, "\(f.name) \(t) then \(inverse) changed pixels")
        } catch { preconditionFailure("\(f.name) inverse of \(t): \(error)") }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1, size <= 1 << 20 else { return 0 }
    var b = Bytes(data: Array(UnsafeBufferPointer(start: data, count: size))[...])
    switch b.u8() % 3 {
    case 0:
        let w = max(1, b.u16()), h = max(1, b.u16())
        let sub = Int32(Int(b.u8() % 8) - 1)  // -1…6: unknown, the six libjpeg ones, one beyond
        _ = checkPlan(width: w, height: h, sub: sub, transform(&b))
    case 1:
        let f = fixtures[Int(b.u8()) % fixtures.count]
        checkFixture(f, transform(&b))
    default:
        let t = transform(&b)
        let jpeg = Array(b.data)
        if let out = try? apply(jpeg, t), let size = sofSize(out.jpeg) {
            precondition(size == (out.width, out.height), "reports \(out.width)x\(out.height), is \(size)")
        }
        guard let header = try? JPEGDecoder.size(of: jpeg), header.width * header.height <= 1 << 20 else { return 0 }
        jpeg.withUnsafeBytes { bytes in
            // Zoom keeps the frame's size: the re-encoded JPEG is the header's size.
            if let out = try? recoder.recode(bytes, with: encoder, quality: 80, transform: FrameTransform(zoom: 2)) {
                precondition(sofSize(out.jpeg).map { $0 == (header.width, header.height) } ?? false,
                             "recoded \(header.width)x\(header.height) into \(String(describing: sofSize(out.jpeg)))")
            }
            // Luma is halved until it fits the width asked for (1/2, 1/4, 1/8).
            if let (w, h) = try? luma.decode(bytes, maxWidth: 160, { _, w, h in (w, h) }) {
                precondition(w >= 1 && h >= 1 && w <= 160, "luma \(w)x\(h) of \(header)")
            }
        }
    }
    return 0
}
