// Talk-back by WHIP: each POSTed offer (a client sending its microphone as Opus) becomes a
// WebRTCTalker whose decoded voice plays on its camera's speaker, kept under a random id for
// its `Location` (DELETE ends it). One talker per camera: a second is refused while the first
// talks (409), as a doorbell has one speaker. The speaker opens before the answer (a busy or
// missing device is the offer's error, not a silent talk) and closes with the talk. A talker
// that went away — its tab closed, its network gone — is ended by the sweep: failed or closed
// at once, disconnected or silent for 5 s (it sends RTP all along), never connected in 15 s.

import CameraCore
import Foundation
import HTTPServer
import Logging
import Streaming
import SystemSupport

final class TalkService: Sendable {
    private struct Entry {
        let camera: String
        let talker: WebRTCTalker
        let speaker: any SpeakerDevice
        var health: PeerHealth
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

    /// Whether someone talks to `camera` now.
    func isTalking(_ camera: String) -> Bool { talks.withLock { $0.values.contains { $0.camera == camera } } }

    var count: Int { talks.withLock { $0.count } }

    /// Answers `offer` with a talker playing on `camera`'s speaker: the talk's id and the SDP answer.
    func open(offer: String, camera: String) async throws(HTTPError) -> (id: String, answer: String) {
        guard let speaker = speakers[camera] else {
            throw HTTPError(422, "unsupported", "Camera \(camera) has no speaker to talk through (cameras[].speaker).")
        }
        guard busy.withLock({ $0.insert(camera).inserted }) else {
            throw HTTPError(409, "talk_busy", "Someone is talking to camera \(camera); one talker at a time.")
        }
        var admitted = false
        defer { if !admitted { _ = busy.withLock { $0.remove(camera) } } }
        let format = AudioFormat(encoding: .s16le, sampleRate: 48_000, channels: 1)
        do throws(AudioError) { try speaker.open(format) } catch {
            throw HTTPError(503, "speaker_unavailable", "Camera \(camera)'s speaker \(speaker.name) cannot play: \(error).")
        }
        let ice = self.ice, logger = self.logger
        let lost = Locked(false)
        let made = await onOwnThread("talk-answer") { () -> Result<WebRTCTalker, StreamingError> in
            Result { () throws(StreamingError) in
                try WebRTCTalker(offer: offer, ice: ice) { samples, _, _ in
                    // The pipeline's thread: the voice as it comes (48 kHz mono, as opened).
                    do throws(AudioError) { try speaker.play(samples) } catch {
                        if !lost.withLock({ l in defer { l = true }; return l }) {
                            logger.warning("camera \(camera): the speaker \(speaker.name) failed: \(error)")
                        }
                    }
                }
            }
        }
        let talker: WebRTCTalker
        switch made {
        case .success(let t): talker = t
        case .failure(let e):
            speaker.close()
            switch e {
            case .malformedOffer(let m): throw HTTPError(400, "invalid_sdp", "The offer is not an SDP offer this server can answer: \(m).")
            case .noOpus(let m): throw HTTPError(422, "unsupported_codec", "The offer has no sound this server can play: \(m).")
            default: throw HTTPError(500, "webrtc_failed", "WebRTC could not start: \(e).")
            }
        }
        let id = UUID().uuidString.lowercased()
        talks.withLock { $0[id] = Entry(camera: camera, talker: talker, speaker: speaker, health: PeerHealth(created: Clock.monotonic())) }
        admitted = true
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
        e.speaker.close()
        _ = busy.withLock { $0.remove(e.camera) }
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
