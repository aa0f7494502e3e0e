// `viewfinder-bench codecs`: the preview's JPEG and the live H.264 on the same frames, for
// bench/live.py's bits-at-equal-SSIM comparison. FRAMES frames of the synthetic camera (its
// moving scene, its sensor noise at ISO) are captured once, written raw to OUTDIR/raw.yuyv
// (and the same frames without the noise to OUTDIR/clean.yuyv), then encoded by the server's
// own encoders: JPEGEncoder at each quality
// (OUTDIR/q<Q>.mjpeg, the JPEGs one after another), LiveEncoder at each CRF with no cap
// to speak of (OUTDIR/crf<C>.h264, Annex B) and LiveEncoder as the live stream runs — CRF 23
// under the default cap at this size (OUTDIR/cap.h264, the cap in "capKbits"), and libvpx as the
// VP8 rendition runs (OUTDIR/vp8.ivf). Prints the
// bytes of each as JSON; SSIM is ffmpeg's, in Python.
//
//   viewfinder-bench codecs 1280 720 150 400 bench/out/codecs 60,70,80,90 18,23,28

import CameraCore
import Capture
import Foundation
import JPEG
import Movie
import SystemSupport

func runCodecs(_ args: [String]) -> Int32 {
    guard args.count >= 9, let width = Int(args[2]), let height = Int(args[3]), let count = Int(args[4]),
          let iso = Double(args[5]) else {
        FileHandle.standardError.write(Data("usage: viewfinder-bench codecs WIDTH HEIGHT FRAMES ISO OUTDIR QUALITIES CRFS\n".utf8))
        return 2
    }
    let dir = args[6]
    let qualities = args[7].split(separator: ",").compactMap { Int($0) }
    let crfs = args[8].split(separator: ",").compactMap { Int($0) }
    do {
        try StoreDirectory(dir).ensure()
        let format = VideoFormat(pixelFormat: .yuyv, width: width, height: height, fps: 30)
        let frames = try capture(format: format, count: count, iso: iso, noise: true)
        try AtomicFile.write(frames.flatMap { $0.bytes }, to: "\(dir)/raw.yuyv", mode: 0o644)
        // The same frames (the same sequence numbers: the scene moves by them) without the
        // sensor's noise: the picture the encoders' input is a noisy capture of.
        let clean = try capture(format: format, count: count, iso: iso, noise: false)
        try AtomicFile.write(clean.flatMap { $0.bytes }, to: "\(dir)/clean.yuyv", mode: 0o644)
        var sizes: [String] = []
        let jpeg = try JPEGEncoder()
        for q in qualities {
            var out: [UInt8] = []
            var times: [Double] = []
            for f in frames {
                let start = Clock.monotonic()
                out += try f.bytes.withUnsafeBytes { try jpeg.encodeYUYV($0, width: width, height: height, stride: width * 2, quality: q) }
                times.append((Clock.monotonic() - start) * 1000)
            }
            sizes.append("\"q\(q)Ms\": \(times.sorted()[times.count / 2])")
            try AtomicFile.write(out, to: "\(dir)/q\(q).mjpeg", mode: 0o644)
            sizes.append("\"q\(q)\": \(out.count)")
        }
        let preset = ProcessInfo.processInfo.environment["LIVE_PRESET"] ?? LiveEncoderSettings().preset
        // The curve: each CRF alone (a cap of 100 Mbit/s is above any rate here); then the live
        // stream's own settings, the default cap.
        // Then Constrained Baseline (what the stream becomes while a viewer decodes nothing
        // else): uncapped at the first CRF, and under the cap.
        var baseline = LiveEncoderSettings(bitrate: 100_000, preset: preset, crf: crfs.first ?? 23)
        baseline.profile = .constrainedBaseline
        var cappedBaseline = LiveEncoderSettings(preset: preset)
        cappedBaseline.profile = .constrainedBaseline
        let cases = crfs.map { ("crf\($0)", LiveEncoderSettings(bitrate: 100_000, preset: preset, crf: $0)) }
            + [("cap", LiveEncoderSettings(preset: preset)), ("baseline", baseline), ("capBaseline", cappedBaseline)]
        for (name, settings) in cases {
            let encoder = try LiveEncoder(format: format, settings: settings)
            var out: [UInt8] = []
            var times: [Double] = []
            for f in frames {
                let start = Clock.monotonic()
                defer { times.append((Clock.monotonic() - start) * 1000) }
                let units = try f.bytes.withUnsafeBytes { b throws(MovieError) -> [AccessUnit] in
                    let raw = RawFrame(format: format, bytes: b, stride: width * 2, sequence: f.sequence, timestamp: f.timestamp)
                    return try encoder.encode(raw, keyframe: false)
                }
                for u in units { out += u.bytes }
            }
            try AtomicFile.write(out, to: "\(dir)/\(name).h264", mode: 0o644)
            sizes.append("\"\(name)\": \(out.count)")
            sizes.append("\"\(name)Ms\": \(times.sorted()[times.count / 2])")
            if name == "cap" { sizes.append("\"capKbits\": \(encoder.bitrate)") }
        }
        // The VP8 rendition a WebRTC viewer without H.264 gets: libvpx as the live output runs
        // it, at the main stream's cap (OUTDIR/vp8.ivf, an IVF file ffmpeg reads).
        let vp8 = try LiveEncoder(format: format, settings: LiveEncoderSettings(preset: preset), kind: .libvpx)
        var ivf = ivfHeader(width: width, height: height, frames: frames.count)
        var vp8Bytes = 0
        var vp8Times: [Double] = []
        for (n, f) in frames.enumerated() {
            let start = Clock.monotonic()
            let units = try f.bytes.withUnsafeBytes { b throws(MovieError) -> [AccessUnit] in
                try vp8.encode(RawFrame(format: format, bytes: b, stride: width * 2, sequence: f.sequence, timestamp: f.timestamp),
                               keyframe: false)
            }
            vp8Times.append((Clock.monotonic() - start) * 1000)
            for u in units {
                ivf += le32(UInt32(u.bytes.count)) + le32(UInt32(n)) + le32(0) + u.bytes
                vp8Bytes += u.bytes.count
            }
        }
        try AtomicFile.write(ivf, to: "\(dir)/vp8.ivf", mode: 0o644)
        sizes.append("\"vp8\": \(vp8Bytes)")
        sizes.append("\"vp8Ms\": \(vp8Times.sorted()[vp8Times.count / 2])")
        print("{\"width\": \(width), \"height\": \(height), \"frames\": \(frames.count), \"iso\": \(iso), " + sizes.joined(separator: ", ") + "}")
        return 0
    } catch {
        FileHandle.standardError.write(Data("viewfinder-bench codecs: \(error)\n".utf8))
        return 1
    }
}

private func le32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }

/// An IVF file's header: VP8 at 30 fps, `frames` frames.
private func ivfHeader(width: Int, height: Int, frames: Int) -> [UInt8] {
    Array("DKIF".utf8) + [0, 0, 32, 0] + Array("VP80".utf8) + [UInt8(width & 0xff), UInt8(width >> 8), UInt8(height & 0xff), UInt8(height >> 8)]
        + le32(30) + le32(1) + le32(UInt32(frames)) + le32(0)
}

private struct Captured: Sendable {
    var bytes: [UInt8]
    var sequence: UInt64
    var timestamp: Double
}

/// Frames 30 to 30 + `count` of the synthetic rear camera at `iso` (custom exposure at the
/// scene's brightness), with or without its sensor noise.
private func capture(format: VideoFormat, count: Int, iso: Double, noise: Bool) throws -> [Captured] {
    let camera = SyntheticCamera(id: "rear", position: .rear)
    camera.noise = noise
    var s = DeviceSettings(for: camera.capabilities)
    s.exposure.mode = .custom
    s.exposure.iso = iso
    s.exposure.duration = (1.0 / 60) * 100 / iso  // the product that renders the scene as drawn
    _ = try camera.apply(SettingsChange(old: nil, new: s))
    let frames = Locked<[Captured]>([])
    let done = DispatchSemaphore(value: 0)
    try camera.start(format: format) { frame in
        guard frame.sequence >= 30 else { return }
        let full = frames.withLock { f -> Bool in
            guard f.count < count else { return false }
            f.append(Captured(bytes: Array(frame.bytes.prefix(format.width * format.height * 2)), sequence: frame.sequence, timestamp: frame.timestamp))
            return f.count == count
        }
        if full { done.signal() }
    }
    done.wait()
    camera.stop()
    return frames.withLock { $0 }
}
