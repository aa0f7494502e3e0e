// The synthetic speaker (issue 37's talk-back): it plays 48 kHz mono while a talk has it open,
// keeps the last 30 s of it, oldest first, and refuses a format it cannot play.

import CameraCore
import Testing
@testable import Sound

@Suite struct SyntheticSpeakerTests {
    @Test func itKeepsTheLastThirtySecondsItPlayedWhileOpen() throws {
        let s = SyntheticSpeaker()
        let format = AudioFormat(encoding: .s16le, sampleRate: 48_000, channels: 1)
        let second = [Int16](repeating: 7, count: 48_000)
        try second.withUnsafeBufferPointer { try s.play($0) }
        #expect(s.recent(seconds: 1).isEmpty, "closed: nothing plays")
        try s.open(format)
        for i in 0..<32 {
            let tone = [Int16](repeating: Int16(i), count: 48_000)
            try tone.withUnsafeBufferPointer { try s.play($0) }
        }
        s.close()
        let kept = s.recent(seconds: 60)
        #expect(kept.count == 30 * 48_000, "30 s kept, not \(Double(kept.count) / 48_000)")
        #expect(kept.first == 2 && kept.last == 31, "the oldest first, the last second last")
        #expect(s.recent(seconds: 0.5) == [Int16](repeating: 31, count: 24_000))
        #expect(throws: AudioError.self) { try s.open(AudioFormat(encoding: .s16le, sampleRate: 44_100, channels: 1)) }
        #expect(throws: AudioError.self) { try s.open(AudioFormat(encoding: .s16le, sampleRate: 48_000, channels: 2)) }
    }
}
