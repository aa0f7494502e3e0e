// WebRTC by WHEP: each POSTed offer becomes a WebRTCPeer fed from its camera's LiveHub, kept
// under a random id for its `Location` (DELETE ends it). A peer the client abandoned — the tab
// closed, the network gone — is found each second: its connection failed or closed (at once),
// disconnected for 5 s, never connected within 15 s, or silent for 5 s (a connected browser
// sends RTCP reports every second or so; ICE on its own may not notice a peer that vanished).

import Foundation
import HTTPServer
import Logging
import Session
import Streaming
import SystemSupport

final class WHEPService: Sendable {
    private struct Entry {
        let peer: WebRTCPeer
        let feeder: LiveFeeder
        let created: Double
        var unwellSince: Double?
    }
    private let sessions = Locked<[String: Entry]>([:])
    private let ice: ICEConfiguration
    private let logger: Logger
    private let alarm = Locked<Alarm?>(nil)
    /// Threads of this service's own (the warm-up, peers being ended): `closeAll` waits for
    /// them, so none is still in GStreamer or OpenSSL while the process exits (OpenSSL's exit
    /// handlers free the locks a DTLS element being made still takes).
    private let work = DispatchGroup()
    /// Seconds a peer may take to connect before it is taken for abandoned.
    let connectTimeout = Locked(15.0)

    init(ice: ICEConfiguration, logger: Logger) {
        self.ice = ice
        self.logger = logger
        let a = Alarm { [weak self] in self?.sweep() }
        alarm.withLock { $0 = a }
        a.set(after: 1, leeway: 0.1)
    }

    /// The plugins and the DTLS certificate ready before the first viewer asks (once a process:
    /// what it loads stays loaded).
    func warmUp() {
        guard Self.warmed.withLock({ w in defer { w = true }; return !w }) else { return }
        work.enter()
        Thread.detachNewThread { [work] in
            ThreadName.set("whep-warm-up")
            WebRTCPeer.warmUp()
            work.leave()
        }
    }

    var count: Int { sessions.withLock { $0.count } }

    private static let warmed = Locked(false)

    /// Seconds without a packet from a connected peer before it is taken for gone.
    static let silenceLimit = 5.0

    /// Answers `offer` with a peer sending `source`'s camera: the session id and the SDP answer.
    /// The peer's pipeline is built and ICE gathered on a thread of its own, not the caller's.
    func open(offer: String, source: SessionFeed) async throws(HTTPError) -> (id: String, answer: String) {
        let ice = self.ice
        let made: Result<WebRTCPeer, StreamingError> = await withCheckedContinuation { done in
            Thread.detachNewThread {
                ThreadName.set("whep-answer")
                done.resume(returning: Result { () throws(StreamingError) in try WebRTCPeer(offer: offer, ice: ice) })
            }
        }
        let peer: WebRTCPeer
        switch made {
        case .success(let p): peer = p
        case .failure(.malformedOffer(let m)): throw HTTPError(400, "invalid_sdp", "The offer is not an SDP offer this server can answer: \(m).")
        case .failure(.noH264(let m)): throw HTTPError(422, "unsupported_codec", "The offer has no codec this server sends: \(m).")
        case .failure(let e): throw HTTPError(500, "webrtc_failed", "WebRTC could not start: \(e).")
        }
        let id = UUID().uuidString.lowercased()
        let feeder = LiveFeeder(feed: peer.feed, source: source, kind: "webrtc")
        sessions.withLock { $0[id] = Entry(peer: peer, feeder: feeder, created: Clock.monotonic()) }
        feeder.start()
        return (id, peer.answer)
    }

    /// Ends session `id`; false when there is none.
    func close(_ id: String) -> Bool {
        guard let e = sessions.withLock({ $0.removeValue(forKey: id) }) else { return false }
        end(e)
        return true
    }

    func closeAll() {
        alarm.withLock { $0?.cancel(); $0 = nil }
        for e in sessions.withLock({ s in defer { s.removeAll() }; return Array(s.values) }) { end(e) }
        _ = work.wait(timeout: .now() + 10)
    }

    private func end(_ e: Entry) {
        e.feeder.stop()
        e.peer.close()
    }

    private func sweep() {
        let now = Clock.monotonic()
        var gone: [(String, Entry, WebRTCPeer.State)] = []
        sessions.withLock { s in
            for (id, var e) in s {
                let state = e.peer.state
                let expired: Bool
                switch state {
                case .connected where (e.peer.silence ?? 0) >= Self.silenceLimit: expired = true
                case .connected: e.unwellSince = nil; expired = false
                case .failed, .closed: expired = true
                case .disconnected:
                    let since = e.unwellSince ?? now
                    e.unwellSince = since
                    expired = now - since >= 5
                case .new, .connecting: expired = now - e.created > connectTimeout.withLock { $0 }
                }
                s[id] = expired ? nil : e
                if expired { gone.append((id, e, state)) }
            }
        }
        alarm.withLock { $0?.set(after: 1, leeway: 0.1) }
        guard !gone.isEmpty else { return }
        // Stopping a pipeline can take a while: not on the alarms' queue.
        work.enter()
        Thread.detachNewThread { [logger, gone, work] in
            defer { work.leave() }
            for (id, e, state) in gone {
                if state == .failed {
                    logger.warning("WHEP session \(id) ended: the peer failed (ICE, DTLS or the pipeline)")
                } else {
                    logger.info("WHEP session \(id) ended: the peer was \(state)")
                }
                e.feeder.stop()
                e.peer.close()
            }
        }
    }
}
