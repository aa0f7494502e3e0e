// A camera's sound encode in one codec: one per camera and codec — AAC shared by everything
// that writes or sends its sound in AAC (movies, RTSP), Opus by every WebRTC viewer — and
// working only while something subscribes: a camera nobody records or hears encodes nothing.
// It takes the microphone's buffers on the capture thread (an AAC frame of 1024 samples or an
// Opus frame of 10 ms costs tens of microseconds) and hands each packet, stamped with the
// capture time of its first sample, to every subscription (SoundSubscription) there. A gap in the buffers' time (a microphone reopened)
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
        var subscribers: [ObjectIdentifier: SoundSubscription.Inbox] = [:]
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

    /// Every packet of `track` from now until the subscription is cancelled (nil: of whatever
    /// track the microphone makes, from when it runs — a WebRTC viewer's Opus, which takes
    /// either). Packets of another track (a microphone reopened differently) are not queued
    /// for a subscription that asked for one: the track it writes could not hold them.
    func subscribe(_ track: AudioTrackInfo?) -> SoundSubscription {
        let inbox = SoundSubscription.Inbox(track: track)
        state.withLock { $0.subscribers[ObjectIdentifier(inbox)] = inbox }
        return SoundSubscription(inbox) { [weak self] inbox in self?.remove(inbox) }
    }

    private func remove(_ inbox: SoundSubscription.Inbox) {
        // The last one leaving closes the encoder (its tail is nobody's).
        state.withLock { s in
            s.subscribers[ObjectIdentifier(inbox)] = nil
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
        let (held, subscribers) = state.withLock { s -> (AudioEncoder?, [SoundSubscription.Inbox]) in
            defer { s.encoder = nil; s.format = nil }
            return (s.encoder, self.subscribers(of: s))
        }
        let tail = (try? held?.flush()) ?? []
        for inbox in subscribers { inbox.add(tail) }
    }

    /// Encodes outside the lock: the encoder is taken out of the state for the encode and put
    /// back after. Only this thread (the microphone's) encodes; a last subscriber leaving
    /// meanwhile, or a new format, leaves it out (its tail is nobody's).
    func takeAudio(_ buffer: borrowing AudioBuffer) {
        let timestamp = buffer.timestamp, format = buffer.format
        let samples = buffer.bytes.bindMemory(to: Int16.self)
        guard let track = track(for: format), let (held, lastRun, subscribers) = state.withLock({ s -> (AudioEncoder?, Int, [SoundSubscription.Inbox])? in
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
        for inbox in subscribers { inbox.add(packets) }
    }

    /// The subscriptions whose track the current format's packets fit.
    private func subscribers(of s: State) -> [SoundSubscription.Inbox] {
        guard let current = s.format.flatMap(track(for:)) else { return [] }
        return s.subscribers.values.filter { $0.takes(current) }
    }
}
