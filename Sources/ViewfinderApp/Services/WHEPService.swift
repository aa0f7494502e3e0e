// WebRTC by WHEP: each POSTed offer becomes a WebRTCPeer fed from its camera's LiveHub (and,
// when the camera has a microphone and the offer receives Opus, its Opus encode), kept in a
// PeerRegistry under a random id for its `Location` (DELETE ends it; the registry's sweep ends
// a viewer that was abandoned). After each sweep the connected viewers' links are read, and
// an adaptive viewer moved between the camera's two streams (StreamAdapter).

import CameraCore
import Foundation
import HTTPServer
import Logging
import Session
import Streaming
import SystemSupport

final class WHEPService: Sendable {
    /// A viewer: its peer, the pump that feeds it, its sound, and how it adapts.
    final class Viewer: RegisteredPeer {
        let peer: WebRTCPeer
        let feeder: FeedPump
        let units: LiveUnitSubscription
        /// Its sound's pump (nil: the offer takes no Opus, or the camera has no microphone).
        let sound: FeedPump?
        /// Reads the link's reports (its send rate); when `adaptive`, chooses the stream by them.
        let adapter: Locked<StreamAdapter>
        /// False: the stream the viewer asked for, kept.
        let adaptive: Bool
        /// The selected pair last logged.
        private let path = Locked<LinkReport.Pair?>(nil)
        /// The session's entity tag (RFC 9725's ETag: its ICE session; a PATCH naming another
        /// in If-Match is refused with 412).
        let etag = "\"" + UUID().uuidString.lowercased().prefix(8) + "\""

        init(peer: WebRTCPeer, feeder: FeedPump, units: LiveUnitSubscription, sound: FeedPump?, adapter: StreamAdapter, adaptive: Bool) {
            self.peer = peer
            self.feeder = feeder
            self.units = units
            self.sound = sound
            self.adapter = Locked(adapter)
            self.adaptive = adaptive
        }

        /// Whether `pair` is new for this viewer (selected first, or another since: ICE moved).
        func notePath(_ pair: LinkReport.Pair) -> Bool {
            path.withLock { p in defer { p = pair }; return p != pair }
        }

        var state: WebRTCPeer.State { peer.state }
        var notes: [String] { peer.gatheringProblems }
        var silence: Double? { peer.silence }
        func named(_ id: String) -> String { "WHEP session \(id)" }
        func end() {
            sound?.stop()
            feeder.stop()
            peer.close()
        }
    }

    private let viewers: PeerRegistry<Viewer>
    /// Asked for each peer: a TURN credential minted from a shared secret is fresh.
    private let ice: @Sendable () -> ICEConfiguration
    private let logger: Logger

    init(ice: @escaping @Sendable () -> ICEConfiguration, logger: Logger) {
        self.ice = ice
        self.logger = logger
        viewers = PeerRegistry(name: "whep", logger: logger)
        viewers.afterSweep { [weak self] now in self?.adapt(now: now) }
    }

    /// Seconds a peer may take to connect before it is taken for abandoned.
    var connectTimeout: Locked<Double> { viewers.connectTimeout }

    /// The plugins and the DTLS certificate ready before the first viewer asks (once a process:
    /// what it loads stays loaded).
    /// Waited for at a stop (`closeAll`, ten seconds at most): a process that exits while the
    /// warm-up makes its key pair crashes in the libraries' exit handlers (SIGSEGV at exit,
    /// seen when the warm-up was left running); past those ten seconds it leaves without them.
    func warmUp() {
        guard Self.warmed.withLock({ w in defer { w = true }; return !w }) else { return }
        viewers.detach("whep-warm-up") { WebRTCPeer.warmUp() }
    }

    var count: Int { viewers.count }

    private static let warmed = Locked(false)

    /// Answers `offer` with a peer sending `stream` of `source`'s camera — or, when `stream` is
    /// nil and `adaptive`, the main stream or the sub stream as its link allows: the session
    /// id and the SDP answer. The peer's pipeline is built and ICE gathered on a thread of its
    /// own, not the caller's.
    func open(offer: String, source: SessionFeed, stream: LiveStreamName? = nil, adaptive: Bool = true) async throws(StreamingError) -> (id: String, answer: String, etag: String) {
        let ice = self.ice  // called on the peer's thread: it may resolve a public address's name
        // A camera with a microphone answers with a sound track even while the microphone is
        // not running yet (it is joined when it runs): mono unless it runs in stereo now (an
        // Opus decoder takes either in the same stream).
        let session = source.session
        let channels = session.hasMicrophone ? session.soundTrack(.opus)?.channels ?? 1 : nil
        let peer = try await onOwnThread("whep-answer") { () -> Result<WebRTCPeer, StreamingError> in
            Result { () throws(StreamingError) in try WebRTCPeer(offer: offer, ice: ice(), opusChannels: channels) }
        }.get()
        // An adaptive viewer starts where its adapter does (the sub stream), and moves up. A
        // viewer without H.264 takes the VP8 rendition of the main stream, the one there is.
        let adapter = StreamAdapter(repairs: peer.retransmits)
        let adapts = stream == nil && adaptive && peer.codec == .h264
        let units = source.liveUnits(peer.codec == .vp8 ? .vp8 : stream ?? (adapts ? adapter.stream : .main), kind: "webrtc",
                                     baseline: peer.codec == .h264 && !peer.acceptsMain)
        let feeder = FeedPump(feed: peer.feed, units: units)
        // Its sound, pumped into the peer's appsrc on the microphone's thread (a push only
        // queues), following the feed as its picture does; a microphone that starts later is
        // heard from its first packet.
        let sound = peer.sound.map { audio in FeedPump(feed: audio, sound: source.sound(.opus)) { ($0.bytes, $0.time) } }
        let viewer = Viewer(peer: peer, feeder: feeder, units: units, sound: sound, adapter: adapter, adaptive: adapts)
        let id = viewers.add(viewer)
        for problem in peer.gatheringProblems { logger.warning("WHEP session \(id): \(problem)") }
        feeder.start()
        sound?.start()
        return (id, peer.answer, viewer.etag)
    }

    /// What a PATCH to a session asks (RFC 9725, section 4.3).
    enum Trickled: Equatable {
        case taken
        case noSession
        /// If-Match named another ICE session than the session's (its ETag).
        case otherSession(etag: String)
    }

    /// Whether session `id` is kept (not ended).
    func has(_ id: String) -> Bool { viewers[id] != nil }

    /// Gives session `id`'s peer the candidates the viewer trickled. `ifMatch`: the request's
    /// If-Match (nil: none sent; `*` with new credentials is an ICE restart, refused; `*`
    /// otherwise matches, as any list naming the session's tag does: RFC 9110's strong match).
    func trickle(_ id: String, _ fragment: ICEFragment, ifMatch: String?) throws(StreamingError) -> Trickled {
        guard let viewer = viewers[id] else { return .noSession }
        if ifMatch == "*" && viewer.peer.restarts(fragment) { throw .iceRestart }
        if let ifMatch, ifMatch != "*",
           !ifMatch.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == viewer.etag }) {
            return .otherSession(etag: viewer.etag)
        }
        guard try viewer.peer.trickle(fragment) else { return .noSession }
        logger.debug("WHEP session \(id): \(fragment.candidates.count) candidates trickled\(fragment.endOfCandidates ? ", the last" : "")")
        return .taken
    }

    /// Ends session `id` (its pipeline stopped off the caller's thread); false when there is none.
    func close(_ id: String) async -> Bool { await viewers.close(id) != nil }

    /// Ends every session and waits (ten seconds at most) for this service's threads. False
    /// when one is still running: the warm-up making its key pair on a starved machine. The
    /// process must then leave without the libraries' exit handlers (`_exit`): OpenSSL's frees
    /// the lock of the random generator that key pair draws from (SIGSEGV in
    /// pthread_rwlock_rdlock under RAND_get0_private, seen at a SIGINT in make test).
    @discardableResult
    func closeAll() async -> Bool { await viewers.closeAll() }

    static func path(_ p: LinkReport.Pair) -> ICEPath {
        ICEPath(local: p.local.type, remote: p.remote.type, protocol: p.local.protocol, relayProtocol: p.local.relayProtocol)
    }

    static func describe(_ e: LinkReport.End) -> String {
        "\(e.type) \(e.protocol) \(e.address):\(e.port)" + (e.relayProtocol.map { " (relayed over \($0))" } ?? "")
    }

    /// Each connected viewer's link, read from webrtcbin's stats (outside any lock: each read
    /// waits for webrtcbin), moves an adaptive viewer between the streams and is shown in the
    /// state.
    private func adapt(now: Double) {
        for (id, viewer) in viewers.all {
            guard viewer.peer.state == .connected, let link = viewer.peer.link else { continue }
            let (to, report) = viewer.adapter.withLock { a in
                let to = a.update(link, now: now)
                return (to, ViewerReport(id: id, adaptive: viewer.adaptive, sendKbps: (a.sendRate * 10).rounded() / 10,
                                         fractionLost: a.fractionLost, roundTripMs: (link.roundTrip * 10_000).rounded() / 10,
                                         path: link.pair.map(Self.path)))
            }
            if let pair = link.pair, viewer.notePath(pair) {
                // The addresses are the log's (an operator's), not the state's (a viewer's to read).
                logger.info("WHEP session \(id): by \(Self.describe(pair.local)) to \(Self.describe(pair.remote))")
            }
            viewer.units.report(report)
            logger.debug("WHEP session \(id) link (its report): reported \(link.reported), lost \(link.fractionLost), round trip \(link.roundTrip), packets lost \(link.packetsLost), sent \(link.packetsSent)")
            if viewer.adaptive, let to {
                viewer.units.switchStream(to: to)
                logger.info("WHEP session \(id): the \(to.rawValue) stream (lost \(Int(report.fractionLost * 100)) %, round trip \(Int(link.roundTrip * 1000)) ms)")
            }
        }
    }
}
