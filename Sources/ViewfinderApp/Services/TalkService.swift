// Talk-back: a camera's speaker, claimed by one talker at a time — as a doorbell has one
// speaker — over WHIP or over RTSP's ONVIF backchannel (RTSPService).
// By WHIP, each POSTed offer (a client sending its microphone as Opus) becomes a
// WebRTCTalker whose decoded voice plays on its camera's speaker, kept under a random id for
// its `Location` (DELETE ends it); a second talker is refused while the first
// talks (409). The speaker opens before the answer (a busy or
// missing device is the offer's error, not a silent talk) and closes with the talk. The talks
// are kept in a PeerRegistry, whose sweep ends a talker that went away (it sends RTP all along).

import CameraCore
import Foundation
import HTTPServer
import Logging
import Streaming
import SystemSupport

/// A camera's speaker taken for one talk: open in 48 kHz mono, the camera busy until `end()`.
final class SpeakerClaim: Sendable {
    let camera: String
    let speaker: any SpeakerDevice
    private let ended = Locked(false)
    private let lost = Locked(false)
    private let logger: Logger
    private let free: @Sendable () -> Void

    fileprivate init(camera: String, speaker: any SpeakerDevice, logger: Logger, free: @escaping @Sendable () -> Void) {
        self.camera = camera
        self.speaker = speaker
        self.logger = logger
        self.free = free
    }

    /// Plays the voice as it comes (48 kHz mono); a speaker that fails is logged once.
    func play(_ samples: UnsafeBufferPointer<Int16>) {
        do throws(AudioError) { try speaker.play(samples) } catch {
            if !lost.withLock({ l in defer { l = true }; return l }) {
                logger.warning("camera \(camera): the speaker \(speaker.name) failed: \(error)")
            }
        }
    }

    /// The speaker plays out what it has and closes; the camera is free. Once.
    func end() {
        guard ended.withLock({ e in defer { e = true }; return !e }) else { return }
        speaker.close()
        free()
    }
}

enum SpeakerRefusal: Error {
    /// The camera has no speaker.
    case none(camera: String)
    /// Someone talks to it already.
    case busy(camera: String)
    /// The device would not open.
    case unavailable(camera: String, device: String, AudioError)
}

/// Why a WHIP talk did not begin: the speaker, or the offer.
enum TalkRefusal: Error {
    case speaker(SpeakerRefusal)
    case offer(StreamingError)
}

final class TalkService: Sendable {
    /// A talk by WHIP: the talker's pipeline and the speaker it plays on.
    final class Talk: RegisteredPeer {
        let talker: WebRTCTalker
        let claim: SpeakerClaim
        init(talker: WebRTCTalker, claim: SpeakerClaim) { self.talker = talker; self.claim = claim }
        var camera: String { claim.camera }
        var state: WebRTCPeer.State { talker.state }
        var silence: Double? { talker.silence }
        func named(_ id: String) -> String { "camera \(camera): talk \(id)" }
        /// The talker stops (no more sound), the speaker plays out and closes, the camera is free.
        func end() {
            talker.close()
            claim.end()
        }
    }
    private let speakers: [String: any SpeakerDevice]
    private let talks: PeerRegistry<Talk>
    /// Cameras with a talk being set up or under way (the lock of "one talker a camera").
    private let busy = Locked<Set<String>>([])
    /// Asked for each peer: a TURN credential minted from a shared secret is fresh.
    private let ice: @Sendable () -> ICEConfiguration
    private let logger: Logger

    init(speakers: [String: any SpeakerDevice], ice: @escaping @Sendable () -> ICEConfiguration, logger: Logger) {
        self.speakers = speakers
        self.ice = ice
        self.logger = logger
        talks = PeerRegistry(name: "talk", logger: logger)
    }

    /// Seconds a talker may take to connect before it is taken for abandoned.
    var connectTimeout: Locked<Double> { talks.connectTimeout }

    /// Camera `camera`'s speaker (nil: it has none).
    func speaker(of camera: String) -> (any SpeakerDevice)? { speakers[camera] }

    /// Whether someone talks to `camera` now (by WHIP or RTSP, or a talk being set up).
    func isTalking(_ camera: String) -> Bool { busy.withLock { $0.contains(camera) } }

    /// Talks by WHIP.
    var count: Int { talks.count }

    /// `camera`'s speaker for one talk, opened in 48 kHz mono; the camera is busy until the
    /// claim ends.
    func claim(_ camera: String) throws(SpeakerRefusal) -> SpeakerClaim {
        guard let speaker = speakers[camera] else { throw .none(camera: camera) }
        guard busy.withLock({ $0.insert(camera).inserted }) else { throw .busy(camera: camera) }
        do throws(AudioError) {
            try speaker.open(AudioFormat(encoding: .s16le, sampleRate: 48_000, channels: 1))
        } catch {
            _ = busy.withLock { $0.remove(camera) }
            throw .unavailable(camera: camera, device: speaker.name, error)
        }
        return SpeakerClaim(camera: camera, speaker: speaker, logger: logger) { [busy] in _ = busy.withLock { $0.remove(camera) } }
    }

    /// Answers `offer` with a talker playing on `camera`'s speaker: the talk's id and the SDP answer.
    func open(offer: String, camera: String) async throws(TalkRefusal) -> (id: String, answer: String) {
        let claim: SpeakerClaim
        do throws(SpeakerRefusal) { claim = try self.claim(camera) } catch { throw .speaker(error) }
        let ice = self.ice  // called on the talker's thread: it may resolve a public address's name
        let made = await onOwnThread("talk-answer") { () -> Result<WebRTCTalker, StreamingError> in
            Result { () throws(StreamingError) in
                // The pipeline's thread: the voice as it comes (48 kHz mono, as opened).
                try WebRTCTalker(offer: offer, ice: ice()) { samples, _, _ in claim.play(samples) }
            }
        }
        let talker: WebRTCTalker
        switch made {
        case .success(let t): talker = t
        case .failure(let e):
            claim.end()
            throw .offer(e)
        }
        let id = talks.add(Talk(talker: talker, claim: claim))
        logger.info("camera \(camera): talk \(id) began")
        return (id, talker.answer)
    }

    /// Ends talk `id` (the pipeline stopped and the speaker drained off the caller's thread);
    /// false when there is none.
    func close(_ id: String) async -> Bool {
        guard let talk = await talks.close(id) else { return false }
        logger.info("camera \(talk.camera): talk \(id) ended")
        return true
    }

    /// Every talk ended, and the threads that end them done (at most ten seconds).
    func closeAll() async { _ = await talks.closeAll() }
}
