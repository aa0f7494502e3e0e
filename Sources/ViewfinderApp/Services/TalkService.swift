// Talk-back: a camera's speaker, claimed by one talker at a time — as a doorbell has one
// speaker — over WHIP or over RTSP's ONVIF backchannel (RTSPService).
// By WHIP, each POSTed offer (a client sending its microphone as Opus) becomes a
// WebRTCTalker whose decoded voice plays on its camera's speaker, kept under a random id for
// its `Location` (DELETE ends it); a second talker is refused while the first
// talks (409). The speaker opens before the answer (a busy or
// missing device is the offer's error, not a silent talk) and closes with the talk. A talker
// that went away — its tab closed, its network gone — is ended by the sweep: failed or closed
// at once, disconnected or silent for 5 s (it sends RTP all along), never connected in 15 s.

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
    case none
    /// Someone talks to it already.
    case busy
    /// The device would not open.
    case unavailable(device: String, AudioError)
}

final class TalkService: Sendable {
    private struct Entry {
        let talker: WebRTCTalker
        let claim: SpeakerClaim
        var health: PeerHealth
        var camera: String { claim.camera }
    }
    private let speakers: [String: any SpeakerDevice]
    private let talks = Locked<[String: Entry]>([:])
    /// Cameras with a talk being set up or under way (the lock of "one talker a camera").
    private let busy = Locked<Set<String>>([])
    private let ice: ICEConfiguration
    private let logger: Logger
    private let alarm = Locked<Alarm?>(nil)
    private let work = DispatchGroup()
    /// Seconds a talker may take to connect before it is taken for abandoned.
    let connectTimeout = Locked(15.0)

    init(speakers: [String: any SpeakerDevice], ice: ICEConfiguration, logger: Logger) {
        self.speakers = speakers
        self.ice = ice
        self.logger = logger
        let a = Alarm { [weak self] in self?.sweep() }
        alarm.withLock { $0 = a }
        a.set(after: 1, leeway: 0.1)
    }

    /// Camera `camera`'s speaker (nil: it has none).
    func speaker(of camera: String) -> (any SpeakerDevice)? { speakers[camera] }

    /// Whether someone talks to `camera` now (by WHIP or RTSP, or a talk being set up).
    func isTalking(_ camera: String) -> Bool { busy.withLock { $0.contains(camera) } }

    /// Talks by WHIP.
    var count: Int { talks.withLock { $0.count } }

    /// `camera`'s speaker for one talk, opened in 48 kHz mono; the camera is busy until the
    /// claim ends.
    func claim(_ camera: String) throws(SpeakerRefusal) -> SpeakerClaim {
        guard let speaker = speakers[camera] else { throw .none }
        guard busy.withLock({ $0.insert(camera).inserted }) else { throw .busy }
        do throws(AudioError) {
            try speaker.open(AudioFormat(encoding: .s16le, sampleRate: 48_000, channels: 1))
        } catch {
            _ = busy.withLock { $0.remove(camera) }
            throw .unavailable(device: speaker.name, error)
        }
        return SpeakerClaim(camera: camera, speaker: speaker, logger: logger) { [busy] in _ = busy.withLock { $0.remove(camera) } }
    }

    /// Answers `offer` with a talker playing on `camera`'s speaker: the talk's id and the SDP answer.
    func open(offer: String, camera: String) async throws(HTTPError) -> (id: String, answer: String) {
        let claim: SpeakerClaim
        do throws(SpeakerRefusal) { claim = try self.claim(camera) } catch {
            switch error {
            case .none: throw HTTPError(422, "unsupported", "Camera \(camera) has no speaker to talk through (cameras[].speaker).")
            case .busy: throw HTTPError(409, "talk_busy", "Someone is talking to camera \(camera); one talker at a time.")
            case .unavailable(let device, let why):
                throw HTTPError(503, "speaker_unavailable", "Camera \(camera)'s speaker \(device) cannot play: \(why).")
            }
        }
        let ice = self.ice
        let made = await onOwnThread("talk-answer") { () -> Result<WebRTCTalker, StreamingError> in
            Result { () throws(StreamingError) in
                // The pipeline's thread: the voice as it comes (48 kHz mono, as opened).
                try WebRTCTalker(offer: offer, ice: ice) { samples, _, _ in claim.play(samples) }
            }
        }
        let talker: WebRTCTalker
        switch made {
        case .success(let t): talker = t
        case .failure(let e):
            claim.end()
            switch e {
            case .malformedOffer(let m): throw HTTPError(400, "invalid_sdp", "The offer is not an SDP offer this server can answer: \(m).")
            case .noOpus(let m): throw HTTPError(422, "unsupported_codec", "The offer has no sound this server can play: \(m).")
            default: throw HTTPError(500, "webrtc_failed", "WebRTC could not start: \(e).")
            }
        }
        let id = UUID().uuidString.lowercased()
        talks.withLock { $0[id] = Entry(talker: talker, claim: claim, health: PeerHealth(created: Clock.monotonic())) }
        logger.info("camera \(camera): talk \(id) began")
        return (id, talker.answer)
    }

    /// Ends talk `id` (the pipeline stopped and the speaker drained off the caller's thread);
    /// false when there is none.
    func close(_ id: String) async -> Bool {
        guard let e = talks.withLock({ $0.removeValue(forKey: id) }) else { return false }
        await onOwnThread("talk-close") { [self] in end(e) }
        logger.info("camera \(e.camera): talk \(id) ended")
        return true
    }

    /// Every talk ended, and the threads that end them done (at most ten seconds).
    func closeAll() async {
        alarm.withLock { $0?.cancel(); $0 = nil }
        let all = talks.withLock { t in defer { t.removeAll() }; return Array(t.values) }
        await onOwnThread("talk-close") { [self, work] in
            for e in all { end(e) }
            _ = work.wait(timeout: .now() + 10)
        }
    }

    /// The talker stops (no more sound), the speaker plays out and closes, the camera is free.
    private func end(_ e: Entry) {
        e.talker.close()
        e.claim.end()
    }

    private func sweep() {
        let now = Clock.monotonic()
        var gone: [(String, Entry, WebRTCPeer.State)] = []
        talks.withLock { t in
            for (id, var e) in t {
                let state = e.talker.state
                let expired = e.health.expired(state, silence: e.talker.silence, now: now, connectTimeout: connectTimeout.withLock { $0 })
                t[id] = expired ? nil : e
                if expired { gone.append((id, e, state)) }
            }
        }
        alarm.withLock { $0?.set(after: 1, leeway: 0.1) }
        guard !gone.isEmpty else { return }
        work.enter()
        Thread.detachNewThread { [self, gone, work] in
            defer { work.leave() }
            for (id, e, state) in gone {
                logger.info("camera \(e.camera): talk \(id) ended: the talker was \(state)")
                end(e)
            }
        }
    }
}
