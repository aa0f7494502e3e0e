// The synthetic sensor's noise: its measured spread on a flat grey frame is the model's
// σ(Y, ISO) (shot and read noise, growing with ISO), chroma gets less, the mean stays, and
// frame n's noise is the same every time while the next frame's differs.

import Testing
@testable import Capture

@Suite struct SensorNoiseTests {
    /// A flat YUYV frame: luma `y`, chroma 128.
    static func flat(_ y: UInt8, pairs: Int = 320 * 240) -> [UInt8] {
        (0..<pairs).flatMap { _ in [y, 128, y, 128] }.prefix(pairs * 4).map { $0 }
    }

    static func stats(_ bytes: [UInt8], luma: Bool) -> (mean: Double, sd: Double) {
        let v = stride(from: luma ? 0 : 1, to: bytes.count, by: 2).map { Double(bytes[$0]) }
        let mean = v.reduce(0, +) / Double(v.count)
        return (mean, (v.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(v.count)).squareRoot())
    }

    func noisy(_ y: UInt8, iso: Double, sequence: UInt64 = 1) -> [UInt8] {
        var frame = Self.flat(y)
        let noise = SensorNoise(seed: 1)
        frame.withUnsafeMutableBytes { noise.apply(to: $0.baseAddress!, bytes: $0.count, sequence: sequence, iso: iso) }
        return frame
    }

    @Test(arguments: [100.0, 400.0, 1600.0])
    func theSpreadIsTheModelsAndGrowsWithISO(iso: Double) {
        let frame = noisy(118, iso: iso)
        let luma = Self.stats(frame, luma: true), chroma = Self.stats(frame, luma: false)
        let expected = SensorNoise.sigma(level: 118, iso: iso)
        #expect(abs(luma.sd - expected) < 0.15 * expected + 0.3, "ISO \(iso): σ \(luma.sd), model \(expected)")
        #expect(abs(luma.mean - 118) < 0.5, "zero-mean: \(luma.mean)")
        #expect(chroma.sd < luma.sd, "chroma \(chroma.sd) below luma \(luma.sd)")
    }

    @Test func shotNoiseGrowsWithTheSignal() {
        let dark = Self.stats(noisy(20, iso: 400), luma: true).sd, bright = Self.stats(noisy(200, iso: 400), luma: true).sd
        #expect(bright > dark * 1.5, "σ at Y=200 \(bright), at Y=20 \(dark)")
    }

    @Test func eachFrameIsTheSameEveryTimeAndDiffersFromTheNext() {
        #expect(noisy(118, iso: 800, sequence: 7) == noisy(118, iso: 800, sequence: 7))
        #expect(noisy(118, iso: 800, sequence: 7) != noisy(118, iso: 800, sequence: 8))
    }
}
