// A talk-back speaker on an ALSA playback PCM (a USB speakerphone, a gadget's `uac2`, a
// sound card's line out, `default` through PulseAudio or PipeWire): opened when a talk
// begins, at 48 kHz, in the device's own channel count (a mono voice copied to each), with
// 20 ms periods; an underrun (the talker's network paused) is recovered and played on.

import CALSA
import CameraCore
import SystemSupport

public final class ALSASpeaker: SpeakerDevice {
    public let name: String
    private struct Open {
        let pcm: ALSAPCM
        let channels: Int
    }
    // One talk plays at a time (the talk service admits one per camera), and its plays come
    // from its pipeline's thread, which stops before the talk closes the speaker. A play holds
    // its own reference to the PCM, so a close never frees it under a write, and the write
    // itself runs outside the lock: ALSA serializes calls on one PCM (alsa-lib's PCM lock,
    // the kernel's for `hw`), so at worst a late play fails once the close drained it.
    private let current = Locked<Open?>(nil)

    public init(pcm name: String) { self.name = name }

    public func open(_ format: AudioFormat) throws(AudioError) {
        guard format.encoding == .s16le, format.channels == 1 else {
            throw .unsupported("a talk plays 16-bit mono, not \(format.channels) channel(s)")
        }
        let pcm = try ALSAPCM(name: name, direction: .playback)
        try pcm.configure(rate: format.sampleRate, periodSeconds: 0.020, periods: 4)
        current.withLock { $0 = Open(pcm: pcm, channels: pcm.format.channels) }
    }

    public func play(_ samples: UnsafeBufferPointer<Int16>) throws(AudioError) {
        guard let o = current.withLock({ $0 }) else { return }
        let frames: [Int16] = o.channels == 1 ? Array(samples) : samples.flatMap { repeatElement($0, count: o.channels) }
        var done = 0
        while done < samples.count {
            let written: Result<Int, AudioError> = frames.withUnsafeBytes { raw in
                Result { () throws(AudioError) in
                    try o.pcm.write(raw.baseAddress!.advanced(by: done * o.channels * 2), frames: samples.count - done)
                }
            }
            switch written {
            case .success(let n): done += n
            case .failure(let error): try o.pcm.recover(from: error, restart: false)  // an underrun: play on
            }
        }
    }

    public func close() {
        let o = current.withLock { o -> Open? in defer { o = nil }; return o }
        o?.pcm.drain()
    }
}
