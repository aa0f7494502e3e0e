import CameraCore
import Movie
import Testing
@testable import Session
import SystemSupport

/// The camera's shared AAC encode: packets only while subscribed, on one timeline while the
/// buffers' time runs on, a new run where it jumps, nothing for a subscriber whose track no
/// longer fits.
@Suite struct AudioEncodeStreamTests {
    let format = AudioFormat(encoding: .s16le, sampleRate: 48_000, channels: 1)

    func feed(_ stream: AudioEncodeStream, from t: Double, buffers: Int) {
        let silence = [Int16](repeating: 0, count: 480)
        silence.withUnsafeBytes { raw in
            for i in 0..<buffers {
                stream.takeAudio(AudioBuffer(format: format, bytes: raw, stride: 2, sequence: UInt64(i), timestamp: t + Double(i) * 0.01))
            }
        }
    }

    @Test func packetsFollowTheBuffersTimeAndAJumpStartsANewRun() throws {
        let stream = AudioEncodeStream(camera: "rear", codec: .aac)
        stream.audioStarted(format)
        let track = try #require(stream.track)
        let got = Locked<[AudioPacket]>([])
        feed(stream, from: 100, buffers: 50)  // nobody subscribes: nothing is encoded
        let sound = stream.subscribe(track)
        sound.deliver { p in got.withLock { $0.append(p) } }
        feed(stream, from: 100.5, buffers: 100)  // one second
        let first = got.withLock { $0 }
        #expect(first.count >= 45 && Set(first.map(\.run)).count == 1, "\(first.count) packets")
        for (a, b) in zip(first, first.dropFirst()) { #expect(abs(b.time - a.time - 1024.0 / 48_000) < 1e-9) }
        #expect(abs(first[1].time - 100.5) < 1e-9, "the first packet after the priming starts at the first sample")
        feed(stream, from: 101.6, buffers: 100)  // 100 ms later than the last buffer's end: a new run
        let runs = got.withLock { $0 }.map(\.run)
        #expect(Set(runs).count == 2)
        let second = got.withLock { $0 }.filter { $0.run == runs.last }
        #expect(abs(second[1].time - 101.6) < 1e-9)
        sound.cancel()
        let count = got.withLock { $0.count }
        feed(stream, from: 102.6, buffers: 10)
        #expect(got.withLock { $0.count } == count && stream.subscriberCount == 0)
    }

    @Test func aSubscriberWhoseTrackNoLongerFitsGetsNothing() throws {
        let stream = AudioEncodeStream(camera: "rear", codec: .aac)
        stream.audioStarted(format)
        let track = try #require(stream.track)
        let got = Locked(0)
        let sound = stream.subscribe(track)
        sound.deliver { _ in got.withLock { $0 += 1 } }
        stream.audioEnded()
        let stereo = AudioFormat(encoding: .s16le, sampleRate: 48_000, channels: 2)
        stream.audioStarted(stereo)
        let silence = [Int16](repeating: 0, count: 960)
        silence.withUnsafeBytes { raw in
            for i in 0..<100 { stream.takeAudio(AudioBuffer(format: stereo, bytes: raw, stride: 4, sequence: 0, timestamp: Double(i) * 0.01)) }
        }
        let queued = if case .item = sound.next() { true } else { false }
        #expect(got.withLock { $0 } == 0 && !queued, "a mono track takes no stereo packets")
    }
}
