// The synthetic microphone is a measuring signal (issue 37): noise at about −50 dBFS, and a
// 10 ms beep of 2 kHz at −6 dBFS starting exactly at every whole second of capture time,
// in 10 ms buffers that follow each other without a gap.

import CameraCore
import CaptureTestSupport
import Foundation
import SystemSupport
import Testing
@testable import Sound

@Suite struct SyntheticMicrophoneTests {
    /// Runs the microphone until a whole second has passed inside what it delivered; answers
    /// every buffer (time, samples).
    func capture() async throws -> [(Double, [Int16])] {
        let mic = SyntheticMicrophone()
        let got = Locked([(Double, [Int16])]())
        let done = DispatchSemaphore(value: 0)
        let format = try mic.start { buffer in
            let samples = Array(buffer.bytes.bindMemory(to: Int16.self))
            let count = got.withLock { g -> Int in g.append((buffer.timestamp, samples)); return g.count }
            if count == 130 { done.signal() }  // 1.3 s: at least one whole second inside
        }
        #expect(format == SyntheticMicrophone.format)
        let finished = try await offload { done.wait(timeout: .now() + 10 * TestTime.scale) == .success }
        mic.stop()
        #expect(finished)
        return got.withLock { $0 }
    }

    @Test func theBeepStartsAtEveryWholeSecondOverQuietNoise() async throws {
        let buffers = try await capture()
        // Back to back: each buffer starts where the last ended (10 ms, 480 samples).
        for (a, b) in zip(buffers, buffers.dropFirst()) {
            #expect(abs(b.0 - a.0 - 0.010) < 1e-6)
            #expect(b.1.count == 480)
        }
        let beeps = buffers.filter { abs($0.0 - $0.0.rounded()) < 1e-6 }
        #expect(!beeps.isEmpty, "a buffer starts at a whole second")
        for (_, samples) in beeps {
            // The sine from the first sample: 2 kHz is 24 samples a period at 48 kHz.
            let peak = samples.map { abs(Double($0)) }.max()!
            #expect(abs(20 * log10(peak / 32_768) - -6) < 0.3, "−6 dBFS: \(20 * log10(peak / 32_768))")
            #expect(samples[6] > 15_000 && samples[18] < -15_000, "a quarter period in it is the crest")
        }
        // Everything else is the room: about −50 dBFS RMS.
        let quiet = buffers.filter { abs($0.0 - $0.0.rounded()) >= 1e-6 }.flatMap(\.1)
        let rms = (quiet.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(quiet.count)).squareRoot()
        #expect(abs(20 * log10(rms / 32_768) - -50) < 1.5, "\(20 * log10(rms / 32_768)) dBFS")
    }

    @Test func theNoiseIsTheSameFromTheSameSeed() {
        var a = NoiseSource(seed: 7), b = NoiseSource(seed: 7)
        let xs = (0..<100).map { _ in a.next() }
        #expect(xs == (0..<100).map { _ in b.next() })
        #expect(xs.allSatisfy { $0 >= -1 && $0 < 1 } && Set(xs).count == 100)
    }
}
