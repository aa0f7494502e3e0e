// The audio data output (AVCaptureAudioDataOutput, for automation): each client of
// `audio.wav` gets the microphone's PCM as a WAV stream from the next buffer on, endless or
// `seconds` long, with the capture time of its first sample. Buffers are copied on the
// capture thread into each client's queue; a client that stops reading is ended once ten
// seconds wait for it (sound cannot skip ahead as a preview does: a WAV's time is its bytes;
// ten seconds of 48 kHz stereo are under 2 MB, and a loaded host's stalls stay well inside).

import CameraCore
import Foundation
import Subscriptions
import SystemSupport

public final class AudioDataOutput: AudioOutput {
    public let kind = OutputKind.audio
    private struct State {
        var clients: [ObjectIdentifier: AudioSubscription] = [:]
        var running = false
        var buffersIn: UInt64 = 0
        /// Clients ended because they fell two seconds behind.
        var overflowed: UInt64 = 0
    }
    private let state = Locked(State())

    public init() {}

    /// A client from the next buffer on: `seconds` of it (nil: until it goes away).
    public func subscription(seconds: Double?) -> AudioSubscription {
        let s = AudioSubscription(seconds: seconds) { [weak self] id, overflowed in
            self?.state.withLock { st in
                st.clients.removeValue(forKey: id)
                if overflowed { st.overflowed += 1 }
            }
        }
        state.withLock { $0.clients[ObjectIdentifier(s)] = s }
        return s
    }

    public var clientCount: Int { state.withLock { $0.clients.count } }

    public func audioStarted(_ format: AudioFormat) { state.withLock { $0.running = true } }

    public func takeAudio(_ buffer: borrowing AudioBuffer) {
        // A hundred buffers a second per camera: no list made while nobody listens.
        let clients = state.withLock { s -> [AudioSubscription]? in
            s.buffersIn += 1
            return s.clients.isEmpty ? nil : Array(s.clients.values)
        }
        for c in clients ?? [] { c.append(buffer) }
    }

    /// The microphone stopped or was lost: every stream ends (a WAV has one format and no gaps).
    public func audioEnded() {
        let clients = state.withLock { s -> [AudioSubscription] in
            s.running = false
            return Array(s.clients.values)
        }
        for c in clients { c.finish() }
    }

    public var report: OutputReport {
        state.withLock { s in
            OutputReport(type: .audio, active: s.running && !s.clients.isEmpty, clients: ["wav": s.clients.count],
                         framesIn: s.buffersIn, framesDropped: s.overflowed)
        }
    }
}

/// One client of the audio data output: a WAV header, then the PCM, as byte chunks.
public final class AudioSubscription: Subscription, Sendable {
    /// How far a client may fall behind before it is ended.
    public static let backlogSeconds = 10.0
    /// How far a buffer may start from where the last ended: a card's timeline follows the
    /// host's clock by fractions of a millisecond (AudioClock); anything more is a hole.
    static let continuity = 0.005

    private struct State {
        var chunks: [[UInt8]] = []
        var queued = 0
        var first: (format: AudioFormat, timestamp: Double)?
        /// Where the next buffer must start on the capture clock: a WAV's time is its bytes,
        /// so a hole in the timeline (a device started over after a long stall) ends it.
        var expected: Double?
        /// Bytes of PCM still to send (a clip), nil for an endless stream.
        var remaining: Int?
        var ended = false
        var wake: (@Sendable () -> Void)?
        var waiting: CheckedContinuation<(format: AudioFormat, timestamp: Double)?, Never>?
    }
    private let state = Locked(State())
    private let seconds: Double?
    private let gone: @Sendable (ObjectIdentifier, _ overflowed: Bool) -> Void

    init(seconds: Double?, gone: @escaping @Sendable (ObjectIdentifier, Bool) -> Void) {
        self.seconds = seconds
        self.gone = gone
    }

    /// Waits (up to `timeout`) for the first buffer: its format and the capture time of its
    /// first sample (the response's `X-Timestamp`). Nil when none came: no sound now.
    public func start(timeout: Double) async -> (format: AudioFormat, timestamp: Double)? {
        let alarm = Alarm { [self] in resume(with: nil) }
        defer { alarm.cancel() }
        return await withCheckedContinuation { c in
            let now = state.withLock { s -> (format: AudioFormat, timestamp: Double)?? in
                if let f = s.first { return .some(f) }
                if s.ended { return .some(nil) }
                s.waiting = c
                return nil
            }
            if let now { c.resume(returning: now) } else { alarm.set(after: timeout) }
        }
    }

    private func resume(with value: (format: AudioFormat, timestamp: Double)?) {
        state.withLock { s in defer { s.waiting = nil }; return s.waiting }?.resume(returning: value)
    }

    func append(_ buffer: borrowing AudioBuffer) {
        var firstNow: (format: AudioFormat, timestamp: Double)?
        var overflow = false
        let wake = state.withLock { s -> (@Sendable () -> Void)? in
            guard !s.ended else { return nil }
            if let f = s.first, f.format != buffer.format {
                s.ended = true  // the device came back in another format: this WAV is over
            } else if let e = s.expected, abs(buffer.timestamp - e) > Self.continuity {
                s.ended = true  // a hole (or an overlap) in the timeline: this WAV's time would be wrong after it
            } else {
                s.expected = buffer.timestamp + Double(buffer.frames) / Double(buffer.format.sampleRate)
                if s.first == nil {
                    let f = (format: buffer.format, timestamp: buffer.timestamp)
                    s.first = f
                    firstNow = f
                    if let seconds {
                        let frames = Int((seconds * Double(buffer.format.sampleRate)).rounded())
                        s.remaining = frames * buffer.format.bytesPerFrame
                    }
                    s.chunks.append(WAVHeader.bytes(buffer.format, dataBytes: s.remaining))
                }
                var take = buffer.bytes.count
                if let r = s.remaining { take = min(take, r) }
                if take > 0 {
                    s.chunks.append(Array(UnsafeRawBufferPointer(rebasing: buffer.bytes[0..<take])))
                    s.queued += take
                }
                if let r = s.remaining {
                    s.remaining = r - take
                    if r - take <= 0 { s.ended = true }
                }
                let limit = Int(Self.backlogSeconds * Double(buffer.format.sampleRate * buffer.format.bytesPerFrame))
                if s.queued > limit {
                    s.ended = true
                    s.chunks = []
                    overflow = true
                }
            }
            return s.wake
        }
        if let firstNow { resume(with: firstNow) }
        if overflow { gone(ObjectIdentifier(self), true) }
        wake?()
    }

    /// No more buffers: what is queued is still sent, then the stream ends.
    func finish() {
        let wake = state.withLock { s -> (@Sendable () -> Void)? in
            s.ended = true
            return s.wake
        }
        resume(with: nil)
        wake?()
    }

    public func attach(wake: @escaping @Sendable () -> Void) { state.withLock { $0.wake = wake } }

    public func next() -> Pull<[UInt8]> {
        let pulled = state.withLock { s -> Pull<[UInt8]> in
            if !s.chunks.isEmpty {
                let out = s.chunks.count == 1 ? s.chunks[0] : Array(s.chunks.joined())
                s.chunks = []
                s.queued = 0
                return .item(out)
            }
            return s.ended ? .end : .wait
        }
        if case .end = pulled { gone(ObjectIdentifier(self), false) }
        return pulled
    }

    public func cancel() {
        state.withLock { s in
            s.ended = true
            s.chunks = []
            s.wake = nil
        }
        resume(with: nil)
        gone(ObjectIdentifier(self), false)
    }

    deinit { gone(ObjectIdentifier(self), false) }
}

/// A RIFF/WAVE header for 16-bit PCM: `dataBytes` long, or endless (the sizes at their
/// maximum, as streaming WAV writers mark a length not known in advance).
public enum WAVHeader {
    public static func bytes(_ format: AudioFormat, dataBytes: Int?) -> [UInt8] {
        var out: [UInt8] = []
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
        let data = dataBytes.map { UInt32(clamping: $0) } ?? 0xFFFF_FFFF
        out += Array("RIFF".utf8)
        u32(dataBytes == nil ? 0xFFFF_FFFF : data &+ 36)
        out += Array("WAVEfmt ".utf8)
        u32(16)
        u16(format.encoding == .f32le ? 3 : 1)
        u16(UInt16(format.channels))
        u32(UInt32(format.sampleRate))
        u32(UInt32(format.sampleRate * format.bytesPerFrame))
        u16(UInt16(format.bytesPerFrame))
        u16(format.encoding == .f32le ? 32 : 16)
        out += Array("data".utf8)
        u32(data)
        return out
    }
}
