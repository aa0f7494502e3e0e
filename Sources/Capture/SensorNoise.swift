// The synthetic sensor's noise (issue 27, item 6), so the encoders see what a real camera
// gives them — H.264 and MJPEG sizes of a picture, not of a flat test card. A real sensor's
// two sources, in code values (0…255) at gain g = ISO/100:
//
//   shot noise: photons arrive as a Poisson process; a pixel at level Y collected Y/g units
//               of light (the gain made up the rest), so its variance is g·Y/k;
//   read noise: the readout's own, amplified with the signal: g·r.
//
//   σ(Y, ISO) = sqrt(g·Y/k + (g·r)²),  k = 50, r = 0.5
//
// At ISO 100 a mid-grey pixel (Y = 118) varies by 1.6 code values; at ISO 400 by 3.7; at ISO
// 1600 by 10 (a phone's sensor before its denoiser). Chroma gets half the noise of mid-grey.
// Deterministic per frame: the samples come from a fixed Gaussian pattern (seeded by the
// camera) read from an offset set by the frame's sequence number, so frame n is the same in
// every run. The timecode and caption are drawn after it, clean.

import CSensorNoise
import SystemSupport

final class SensorNoise {  // one owner: the capture thread, through its SyntheticFrameSource
    static let shotDivisor = 50.0
    static let readNoise = 0.5
    /// A little over a mebibyte of samples (an odd count of pairs, so frames do not line up
    /// with it), read from a new offset each frame.
    private var pattern: [Int8]
    /// 8σ(Y) = sqrt(a·Y + b): the C loop computes it per pixel (see noise.c for why not a table).
    private var lumaA: Float = 0
    private var lumaB: Float = 0
    private var chromaSigma: UInt16 = 0
    private var scaledISO = -1.0

    init(seed: UInt64) {
        pattern = Self.pattern(seed: seed)
    }

    /// Patterns already drawn, by seed. Half a million Box-Muller draws take 25 ms alone and
    /// seconds on a loaded machine, in the camera's start, on the session's queue: a camera
    /// started again (a switch back, a reconfigure) reuses its pattern. It never changes once
    /// drawn, so every copy shares one buffer. A few seeds at most (one per synthetic camera).
    private static let drawn = Locked<[UInt64: [Int8]]>([:])

    private static func pattern(seed: UInt64) -> [Int8] {
        if let p = drawn.withLock({ $0[seed] }) { return p }
        var p = [Int8](repeating: 0, count: (1 << 20) + 2 * 997)
        p.withUnsafeMutableBufferPointer { vf_noise_pattern($0.baseAddress, $0.count, seed) }
        drawn.withLock { if $0.count < 16 { $0[seed] = p } }
        return p
    }

    /// The standard deviation in code values of a pixel at level `y` and `iso`.
    static func sigma(level y: Double, iso: Double) -> Double {
        let g = max(iso, 1) / 100
        return (g * y / shotDivisor + (g * readNoise) * (g * readNoise)).squareRoot()
    }

    /// Adds frame `sequence`'s noise at `iso` to a YUYV frame.
    func apply(to frame: UnsafeMutableRawPointer, bytes: Int, sequence: UInt64, iso: Double) {
        if iso != scaledISO {
            // (8σ)² = 64·(g·Y/k + (g·r)²), as sigma(level:iso:) says.
            let g = max(iso, 1) / 100
            lumaA = Float(64 * g / Self.shotDivisor)
            lumaB = Float(64 * (g * Self.readNoise) * (g * Self.readNoise))
            chromaSigma = UInt16(min(65535, (4 * Self.sigma(level: 128, iso: iso)).rounded()))
            scaledISO = iso
        }
        let offset = Int(truncatingIfNeeded: sequence &* 2 &* 7919) & Int.max
        pattern.withUnsafeBufferPointer { p in
            vf_noise_yuyv(frame.assumingMemoryBound(to: UInt8.self), bytes, p.baseAddress, p.count, offset, lumaA, lumaB, chromaSigma)
        }
    }
}
