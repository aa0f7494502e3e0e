// A camera's sound encode in one codec: one per camera and codec — AAC shared by everything
// that writes or sends its sound in AAC (movies, RTSP), Opus by every WebRTC viewer — and
// working only while something subscribes: a camera nobody records or hears encodes nothing.
// It takes the microphone's buffers on the capture thread (an AAC frame of 1024 samples or an
// Opus frame of 10 ms costs tens of microseconds) and hands each packet, stamped with the
// capture time of its first sample, to every subscriber there. A gap in the buffers' time (a microphone reopened)
// starts a new encoder run at the new time, so a packet's time is always its sound's.

import CameraCore
import Movie
import SystemSupport

final class AudioEncodeStream: AudioConsumer {
    let camera: String
    let codec: AudioTrackInfo.Codec
    private struct State {
        var format: AudioFormat?
        var encoder: AudioEncoder?
        var run = 0
        var subscribers: [Int: Subscriber] = [:]
        var nextID = 1
    }
    private struct Subscriber {
        var track: AudioTrackInfo
        var deliver: @Sendable (AudioPacket) -> Void
    }
    private let state = Locked(State())

    /// A step in the buffers' time beyond this starts a new run (the clock fills smaller gaps).
    static let tolerance = 0.005

    init(camera: String, codec: AudioTrackInfo.Codec) {
        self.camera = camera
        self.codec = codec
    }

    /// The track the packets describe now (nil: no sound, or a format AAC cannot take).
    var track: AudioTrackInfo? {
        state.withLock { s in s.format.flatMap(track(for:)) }
    }

    func track(for format: AudioFormat) -> AudioTrackInfo? {
        guard format.encoding == .s16le else { return nil }
        return AudioTrackInfo.forInput(codec, sampleRate: format.sampleRate, channels: format.channels)
    }

    /// Hands every packet of `track` to `deliver` (on the microphone's thread; it must not
    /// block) until `unsubscribe`. Packets of another format (a microphone reopened
    /// differently) are not delivered: the subscriber's track could not hold them.
    func subscribe(_ track: AudioTrackInfo, _ deliver: @escaping @Sendable (AudioPacket) -> Void) -> Int {
        state.withLock { s in
            defer { s.nextID += 1 }
            s.subscribers[s.nextID] = Subscriber(track: track, deliver: deliver)
            return s.nextID
        }
    }

    func unsubscribe(_ id: Int) {
        // The last one leaving closes the encoder (its tail is nobody's).
        state.withLock { s in
            s.subscribers[id] = nil
            if s.subscribers.isEmpty { s.encoder = nil }
        }
    }

    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    // MARK: - AudioConsumer (the microphone's thread)

    func audioStarted(_ format: AudioFormat) {
        state.withLock { s in
            s.format = format
            s.encoder = nil
        }
    }

    func audioEnded() {
        let (held, subscribers) = state.withLock { s -> (AudioEncoder?, [Subscriber]) in
            defer { s.encoder = nil; s.format = nil }
            return (s.encoder, self.subscribers(of: s))
        }
        let tail = (try? held?.flush()) ?? []
        for sub in subscribers { for p in tail { sub.deliver(p) } }
    }

    /// Encodes outside the lock: the encoder is taken out of the state for the encode and put
    /// back after. Only this thread (the microphone's) encodes; a last subscriber leaving
    /// meanwhile, or a new format, leaves it out (its tail is nobody's).
    func takeAudio(_ buffer: borrowing AudioBuffer) {
        let timestamp = buffer.timestamp, format = buffer.format
        let samples = buffer.bytes.bindMemory(to: Int16.self)
        guard let track = track(for: format), let (held, lastRun, subscribers) = state.withLock({ s -> (AudioEncoder?, Int, [Subscriber])? in
            guard !s.subscribers.isEmpty, format == s.format else { return nil }
            defer { s.encoder = nil }
            return (s.encoder, s.run, self.subscribers(of: s))
        }) else { return }
        var encoder = held, run = lastRun
        var packets: [AudioPacket] = []
        if let e = encoder, abs(e.nextTime - timestamp) > Self.tolerance {
            packets += (try? e.flush()) ?? []
            encoder = nil
        }
        do throws(MovieError) {
            if encoder == nil {
                run += 1
                encoder = try AudioEncoder(codec, sampleRate: track.sampleRate, channels: track.channels,
                                           bitrate: track.bitrate, anchor: timestamp, run: run, inputRate: format.sampleRate)
            }
            packets += try encoder!.encode(samples)
        } catch {
            encoder = nil  // the next buffer starts a new run
        }
        state.withLock { s in
            s.run = run
            if !s.subscribers.isEmpty, s.format == format { s.encoder = encoder }
        }
        for sub in subscribers { for p in packets { sub.deliver(p) } }
    }

    /// The subscribers whose track the current format's packets fit.
    private func subscribers(of s: State) -> [Subscriber] {
        guard let current = s.format.flatMap(track(for:)) else { return [] }
        return s.subscribers.values.filter { $0.track == current }
    }
}
