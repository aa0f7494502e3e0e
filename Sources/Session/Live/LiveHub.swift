// One live H.264 stream of one camera (its main or its sub stream), shared by every live
// client of it: what the current encoder makes (its SPS/PPS and size) and each access unit.
// fMP4 clients box the units themselves, each from its own first keyframe (LiveClientMux): a
// shared muxer's timeline ran on across the time nobody watched. Unlike the
// preview's newest-frame hub, a live client needs every frame from a keyframe on (each
// depends on the one before): each client has its own short queue; one that falls behind by
// more than `queueLimit` frames is cut back to the next keyframe (and one is asked for), so
// a slow client skips, never queues without bound, and never slows the others.

import CameraCore
import Movie
import Subscriptions
import SystemSupport

/// What a live stream is, for a consumer that writes it somewhere (a recording sharing it).
public struct LiveStreamInfo: Sendable, Equatable {
    /// SPS and PPS, Annex B (the encoder's extradata).
    public let extradata: [UInt8]
    /// The encoded picture's size (turned, when a rotation swapped it).
    public let width: Int
    public let height: Int
    public let fps: Int
}

public final class LiveHub: Sendable {
    /// Frames a client may be behind before it is cut back to the next keyframe: 2 s at 30 fps.
    static let queueLimit = 60

    fileprivate enum Next: Sendable {
        /// The current encoder's stream begins for this client (an fMP4 client's init segment).
        case start(LiveStreamInfo)
        case unit(AccessUnit)
        case wait
        /// The stream restarted (a new format or camera): this client's stream ends.
        case end
        /// The feed it followed moved to another camera: leave this hub and join that one's.
        case moved
    }

    private struct Client {
        var wake: @Sendable () -> Void
        /// The SessionFeed it follows (nil: this hub for good); a move marks it `moved`.
        var feed: ObjectIdentifier?
        /// What it is, for the state's counts (`rtsp`, `webrtc`, `mp4`, `movie`, `motion`).
        var kind: String
        var moved = false
        var queue: [AccessUnit] = []
        /// Joined the stream at a keyframe (units before it are not queued).
        var synced = false
        /// The generation whose start this client was told.
        var generation: Int?
        /// A WebRTC viewer's link, as its service last read it.
        var report: ViewerReport?
        /// It decodes Constrained Baseline alone: the stream is encoded so while it watches.
        var baseline = false
    }

    private struct State {
        var info: LiveStreamInfo?
        var generation = 0
        var clients: [ObjectIdentifier: Client] = [:]
        var keyframeWanted = false
    }
    private let state = Locked(State())

    public init() {}

    /// The stream being encoded now (nil before its first frame) and its generation (one more
    /// for each new encoder).
    public var info: LiveStreamInfo? { state.withLock { $0.info } }
    public var generation: Int { state.withLock { $0.generation } }

    /// Someone is watching: the live encoder runs only then.
    public var hasClients: Bool { state.withLock { !$0.clients.isEmpty } }

    /// The clients by kind (a moved one counts where it goes, not here).
    public var clientCounts: [String: Int] {
        state.withLock { s in
            s.clients.values.reduce(into: [:]) { counts, c in if !c.moved { counts[c.kind, default: 0] += 1 } }
        }
    }

    /// A client joins; it is woken (`wake`) whenever it may have more. An IDR is asked for, so
    /// it starts at once.
    fileprivate func subscribe(_ id: ObjectIdentifier, kind: String, feed: ObjectIdentifier? = nil, baseline: Bool = false,
                          wake: @escaping @Sendable () -> Void) {
        state.withLock { s in
            s.clients[id] = Client(wake: wake, feed: feed, kind: kind, baseline: baseline)
            s.keyframeWanted = true
        }
    }

    /// The profile the stream must be in for every client now: Constrained Baseline while one
    /// decodes nothing else (one encode serves every viewer), Main otherwise.
    public var profile: H264Profile {
        state.withLock { s in s.clients.values.contains { $0.baseline && !$0.moved } ? .constrainedBaseline : .main }
    }

    /// What a client's link reports (a WebRTC viewer's), for the state.
    fileprivate func setReport(_ id: ObjectIdentifier, _ report: ViewerReport) {
        state.withLock { s in s.clients[id]?.report = report }
    }

    /// The WebRTC viewers' links, by their ids.
    public var viewerReports: [ViewerReport] {
        state.withLock { s in s.clients.values.compactMap { $0.moved ? nil : $0.report }.sorted { $0.id < $1.id } }
    }

    fileprivate func unsubscribe(_ id: ObjectIdentifier) {
        state.withLock { _ = $0.clients.removeValue(forKey: id) }
    }

    /// The clients following `feed` leave: each is told `.moved` at its next `next`, and woken for it.
    func detach(feed: ObjectIdentifier) {
        let wake = state.withLock { s -> [@Sendable () -> Void] in
            var wake: [@Sendable () -> Void] = []
            for id in s.clients.keys where s.clients[id]!.feed == feed {
                s.clients[id]!.moved = true
                s.clients[id]!.queue.removeAll()
                wake.append(s.clients[id]!.wake)
            }
            return wake
        }
        for w in wake { w() }
    }

    /// A client's decoder lost its place (a PLI from a browser): the next frame is an IDR.
    public func requestKeyframe() { state.withLock { $0.keyframeWanted = true } }

    /// Whether a client asked for a keyframe since the last call (the encoder's question).
    func takeKeyframeRequest() -> Bool {
        state.withLock { s in defer { s.keyframeWanted = false }; return s.keyframeWanted }
    }

    /// A new encoder starts (a launch, a new format). Clients of the old one end their streams
    /// (a player cannot take a second moov mid-stream); new ones start here.
    func start(_ info: LiveStreamInfo) {
        let wake = state.withLock { s -> [@Sendable () -> Void] in
            s.generation += 1
            s.info = info
            return s.clients.values.map(\.wake)
        }
        for w in wake { w() }
    }

    /// The run ended: no stream is encoded until the next run's first frame starts one. (Kept,
    /// the last run's info would let a recording started before that frame share a stream
    /// that is about to end — a movie ended at once, empty.)
    func end() { state.withLock { $0.info = nil } }

    /// Another encoder takes over the stream at the same size (the one before failed): its
    /// clients go on from its first IDR, whose SPS and PPS are in band (an fMP4 client keeps
    /// its init segment; decoders take the new parameter sets as a camera's own stream's).
    /// At another size it is a new stream, as `start`.
    func replace(_ info: LiveStreamInfo) {
        let same = state.withLock { s -> Bool in
            guard let old = s.info, old.width == info.width, old.height == info.height, old.fps == info.fps else { return false }
            s.info = info
            for id in s.clients.keys { s.clients[id]!.synced = false }  // from the new encoder's IDR on
            return true
        }
        if !same { start(info) }
    }

    func publish(_ unit: AccessUnit) {
        let wake = state.withLock { s -> [@Sendable () -> Void] in
            var wake: [@Sendable () -> Void] = []
            // The clients are changed in place (through `values`): no copy of the table or
            // of a client's queue per frame.
            var i = s.clients.values.startIndex
            while i != s.clients.values.endIndex {
                defer { s.clients.values.formIndex(after: &i) }
                guard !s.clients.values[i].moved, s.clients.values[i].generation == s.generation else { continue }
                if !s.clients.values[i].synced {
                    guard unit.keyframe else { continue }
                    s.clients.values[i].synced = true
                }
                if s.clients.values[i].queue.count >= Self.queueLimit {  // too far behind: again from the next keyframe
                    s.clients.values[i].queue.removeAll()
                    s.clients.values[i].synced = false
                    s.keyframeWanted = true
                    continue
                }
                s.clients.values[i].queue.append(unit)
                wake.append(s.clients.values[i].wake)
            }
            return wake
        }
        for w in wake { w() }
    }

    /// What client `id` sends next: the stream's start first, then its units in order from a
    /// keyframe on.
    fileprivate func next(_ id: ObjectIdentifier) -> Next {
        state.withLock { s in
            guard let c = s.clients.index(forKey: id) else { return .end }
            if s.clients.values[c].moved { return .moved }
            guard let sent = s.clients.values[c].generation else {
                guard let info = s.info else { return .wait }
                s.clients.values[c].generation = s.generation
                return .start(info)
            }
            guard sent == s.generation else { return .end }
            guard !s.clients.values[c].queue.isEmpty else { return .wait }
            return .unit(s.clients.values[c].queue.removeFirst())
        }
    }
}

/// A client of one stream of one hub, the hub's own subscription: the stream's start (what it
/// is, and the hub's generation then), then its units from a keyframe on; it ends with that
/// stream (a new encoder) or when the feed it follows moves. A recording pumps it as it is
/// (LiveRecording, MotionRecording: a movie does not go on into another stream, and is never
/// moved); the transports' subscriptions are made of it (LiveUnitSubscription joins the next
/// stream, LiveMP4Subscription ends with it). It joins the hub when attached.
public final class LiveStreamSubscription: Subscription, Sendable {
    public enum Item: Sendable {
        case start(LiveStreamInfo, generation: Int)
        case unit(AccessUnit)
    }
    private let hub: LiveHub
    private let kind: String
    private let feed: ObjectIdentifier?
    private let baseline: Bool
    private var id: ObjectIdentifier { ObjectIdentifier(self) }

    /// `kind` names its transport in the state (`rtsp`, `webrtc`, `mp4`, `movie`, `motion`);
    /// `feed`, the SessionFeed it follows (nil: this hub for good); `baseline`, a client that
    /// decodes Constrained Baseline alone.
    init(hub: LiveHub, kind: String, feed: ObjectIdentifier? = nil, baseline: Bool = false) {
        self.hub = hub
        self.kind = kind
        self.feed = feed
        self.baseline = baseline
    }

    public func attach(wake: @escaping @Sendable () -> Void) { hub.subscribe(id, kind: kind, feed: feed, baseline: baseline, wake: wake) }

    public func next() -> Pull<Item> {
        switch hub.next(id) {
        case .start(let info): .item(.start(info, generation: hub.generation))
        case .unit(let u): .item(.unit(u))
        case .wait: .wait
        case .end, .moved: .end
        }
    }

    /// The client's fragments start at a keyframe: one is asked of the stream's encoder.
    public func requestKeyframe() { hub.requestKeyframe() }

    /// What this client's link reports (a WebRTC viewer's), for the state.
    func report(_ r: ViewerReport) { hub.setReport(id, r) }

    public func cancel() { hub.unsubscribe(id) }

    deinit { hub.unsubscribe(id) }
}
