// WebRTC by WHEP: each POSTed offer becomes a WebRTCPeer fed from its camera's LiveHub (and,
// when the camera has a microphone and the offer receives Opus, its Opus encode), kept
// under a random id for its `Location` (DELETE ends it). A peer the client abandoned — the tab
// closed, the network gone — is found each second: its connection failed or closed (at once),
// disconnected for 5 s, never connected within 15 s, or silent for 5 s (a connected browser
// sends RTCP reports every second or so; ICE on its own may not notice a peer that vanished).

import CameraCore
import Foundation
import HTTPServer
import Logging
import Session
import Streaming
import SystemSupport

final class WHEPService: Sendable {
    private struct Entry {
        let peer: WebRTCPeer
        let feeder: FeedPump
        let units: LiveUnitSubscription
        let sound: FeedSound?
        var health: PeerHealth
        /// Reads the link's reports (its send rate); when `adaptive`, chooses the stream by them.
        var adapter = StreamAdapter()
        /// False: the stream the viewer asked for, kept.
        let adaptive: Bool
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
    /// Waited for at a stop (`closeAll`, ten seconds at most): a process that exits while the
    /// warm-up makes its key pair crashes in the libraries' exit handlers (SIGSEGV at exit,
    /// seen when the warm-up was left running); past those ten seconds it leaves without them.
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

    /// Answers `offer` with a peer sending `stream` of `source`'s camera — or, when `stream` is
    /// nil and `adaptive`, the main stream or the sub stream as its link allows: the session
    /// id and the SDP answer. The peer's pipeline is built and ICE gathered on a thread of its
    /// own, not the caller's.
    func open(offer: String, source: SessionFeed, stream: LiveStreamName? = nil, adaptive: Bool = true) async throws(HTTPError) -> (id: String, answer: String) {
        let ice = self.ice
        // A camera with a microphone answers with a sound track even while the microphone is
        // not running yet (it is joined when it runs): mono unless it runs in stereo now (an
        // Opus decoder takes either in the same stream).
        let session = source.session
        let channels = session.hasMicrophone ? session.soundTrack(.opus)?.channels ?? 1 : nil
        let made = await onOwnThread("whep-answer") { () -> Result<WebRTCPeer, StreamingError> in
            Result { () throws(StreamingError) in try WebRTCPeer(offer: offer, ice: ice, opusChannels: channels) }
        }
        let peer: WebRTCPeer
        switch made {
        case .success(let p): peer = p
        case .failure(.malformedOffer(let m)): throw HTTPError(400, "invalid_sdp", "The offer is not an SDP offer this server can answer: \(m).")
        case .failure(.noH264(let m)): throw HTTPError(422, "unsupported_codec", "The offer has no codec this server sends: \(m).")
        case .failure(let e): throw HTTPError(500, "webrtc_failed", "WebRTC could not start: \(e).")
        }
        let id = UUID().uuidString.lowercased()
        // An adaptive viewer starts where its adapter does (the sub stream), and moves up. A
        // viewer without H.264 takes the VP8 rendition of the main stream, the one there is.
        let adapter = StreamAdapter(repairs: peer.retransmits)
        let adapts = stream == nil && adaptive && peer.codec == .h264
        let units = source.liveUnits(peer.codec == .vp8 ? .vp8 : stream ?? (adapts ? adapter.stream : .main), kind: "webrtc",
                                     baseline: peer.codec == .h264 && !peer.acceptsMain)
        let feeder = FeedPump(feed: peer.feed, units: units)
        // Its sound, from the microphone's thread straight into the peer's appsrc (a push only
        // queues), following the feed as its picture does.
        let sound = peer.sound.map { audio in source.sound(.opus) { packet in audio.push(packet.bytes, time: packet.time) } }
        sessions.withLock {
            $0[id] = Entry(peer: peer, feeder: feeder, units: units, sound: sound, health: PeerHealth(created: Clock.monotonic()),
                           adapter: adapter, adaptive: adapts)
        }
        feeder.start()
        return (id, peer.answer)
    }

    /// Ends session `id` (its pipeline stopped off the caller's thread); false when there is none.
    func close(_ id: String) async -> Bool {
        guard let e = sessions.withLock({ $0.removeValue(forKey: id) }) else { return false }
        await onOwnThread("whep-close") { [self] in end(e) }
        return true
    }

    /// Ends every session and waits (ten seconds at most) for this service's threads. False
    /// when one is still running: the warm-up making its key pair on a starved machine. The
    /// process must then leave without the libraries' exit handlers (`_exit`): OpenSSL's frees
    /// the lock of the random generator that key pair draws from (SIGSEGV in
    /// pthread_rwlock_rdlock under RAND_get0_private, seen at a SIGINT in make test).
    @discardableResult
    func closeAll() async -> Bool {
        alarm.withLock { $0?.cancel(); $0 = nil }
        let all = sessions.withLock { s in defer { s.removeAll() }; return Array(s.values) }
        return await onOwnThread("whep-close") { [self, work] in
            for e in all { end(e) }
            return work.wait(timeout: .now() + 10) == .success
        }
    }

    private func end(_ e: Entry) {
        e.sound?.cancel()
        e.feeder.stop()
        e.peer.close()
    }

    /// Each connected viewer's link, read from webrtcbin's stats (outside the sessions' lock:
    /// each read waits for webrtcbin), moves an adaptive viewer between the streams and is
    /// shown in the state.
    private func adapt(now: Double) {
        let peers = sessions.withLock { s in s.filter { $0.value.peer.state == .connected }.map { ($0.key, $0.value.peer) } }
        for (id, peer) in peers {
            guard let link = peer.link else { continue }
            let moved = sessions.withLock { s -> (LiveUnitSubscription, LiveStreamName, Double)? in
                guard var e = s[id] else { return nil }
                defer { s[id] = e }
                let to = e.adapter.update(link, now: now)
                e.units.report(ViewerReport(id: id, adaptive: e.adaptive, sendKbps: (e.adapter.sendRate * 10).rounded() / 10,
                                            fractionLost: e.adapter.fractionLost, roundTripMs: (link.roundTrip * 10_000).rounded() / 10))
                return e.adaptive ? to.map { (e.units, $0, e.adapter.fractionLost) } : nil
            }
            logger.debug("WHEP session \(id) link (its report): reported \(link.reported), lost \(link.fractionLost), round trip \(link.roundTrip), packets lost \(link.packetsLost), sent \(link.packetsSent)")
            if let (units, to, lost) = moved {
                units.switchStream(to: to)
                logger.info("WHEP session \(id): the \(to.rawValue) stream (lost \(Int(lost * 100)) %, round trip \(Int(link.roundTrip * 1000)) ms)")
            }
        }
    }

    private func sweep() {
        let now = Clock.monotonic()
        var gone: [(String, Entry, WebRTCPeer.State)] = []
        sessions.withLock { s in
            for (id, var e) in s {
                let state = e.peer.state
                let expired = e.health.expired(state, silence: e.peer.silence, now: now, connectTimeout: connectTimeout.withLock { $0 })
                s[id] = expired ? nil : e
                if expired { gone.append((id, e, state)) } else { e.sound?.refresh() }
            }
        }
        adapt(now: now)
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
                e.sound?.cancel()
                e.feeder.stop()
                e.peer.close()
            }
        }
    }
}
