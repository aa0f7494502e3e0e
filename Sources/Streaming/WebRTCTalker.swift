// Talk-back: a WebRTC peer receiving a client's microphone as Opus (WHIP), made from its SDP
// offer; the voice, decoded to 48 kHz mono, goes to `sound` on the pipeline's thread until
// the talker is closed. The offer/answer and ICE are the sending peer's (WebRTCPeer).

import CGStreamerShim
import Glibc
import SystemSupport

public final class WebRTCTalker: @unchecked Sendable {  // `raw` is closed once, under `closed`
    private let raw: OpaquePointer
    private let closed = Locked(false)
    private let box: Unmanaged<SoundBox>
    /// The SDP answer.
    public let answer: String

    /// Where the decoded voice goes: interleaved s16 samples, their rate and channel count.
    public typealias Sound = @Sendable (UnsafeBufferPointer<Int16>, _ rate: Int, _ channels: Int) -> Void

    private final class SoundBox {
        let sound: Sound
        init(_ sound: @escaping Sound) { self.sound = sound }
    }

    /// Blocks up to `timeout` seconds (ICE gathering): call it off the request threads.
    public init(offer: String, ice: ICEConfiguration, timeout: Double = 3, sound: @escaping Sound) throws(StreamingError) {
        try GStreamer.start()
        var error = [CChar](repeating: 0, count: 512)
        var answer: UnsafeMutablePointer<CChar>?
        var why: Int32 = 0
        let box = Unmanaged.passRetained(SoundBox(sound))
        let callback: vfg_talk_sound = { context, samples, frames, rate, channels in
            guard let context, let samples else { return }
            let box = Unmanaged<SoundBox>.fromOpaque(context).takeUnretainedValue()
            box.sound(UnsafeBufferPointer(start: samples, count: frames * Int(max(1, channels))), Int(rate), Int(channels))
        }
        let raw = withPeerOptions(offer: offer, ice: ice, timeout: timeout, opusChannels: 0) { options in
            vfg_talk_answer(options, callback, box.toOpaque(), &answer, &why, &error, error.count)
        }
        guard let raw, let answer else {
            box.release()
            let message = GStreamer.message(error)
            switch Int(why) {
            case Int(VFG_PEER_MALFORMED_OFFER): throw .malformedOffer(message)
            case Int(VFG_PEER_NO_OPUS): throw .noOpus(message)
            default: throw .peer(message)
            }
        }
        self.raw = raw
        self.box = box
        self.answer = PublicCandidates.adding(ice.publicAddresses, to: String(cString: answer))
        vfg_free(answer)
        try GStreamer.checkPorts(self.answer, ice)  // deinit closes the talker
    }

    /// Seconds since the talker last sent anything (it sends RTP all along), nil before its first packet.
    public var silence: Double? {
        closed.withLock { c -> Double? in
            guard !c else { return nil }
            let ms = vfg_talk_silent_ms(raw)
            return ms < 0 ? nil : Double(ms) / 1000
        }
    }

    public var state: WebRTCPeer.State {
        closed.withLock { c in c ? .closed : WebRTCPeer.State(rawValue: vfg_talk_state(raw)) ?? .failed }
    }

    /// Stops the pipeline (no sound after it returns); once.
    public func close() {
        let first = closed.withLock { c -> Bool in defer { c = true }; return !c }
        guard first else { return }
        vfg_talk_close(raw)
        box.release()
    }

    deinit { close() }
}
