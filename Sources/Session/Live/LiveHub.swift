// The live H.264 stream of one camera, shared by every live client (issue 27): the init
// segment of the current encoder and each access unit as an fMP4 fragment. Unlike the
// preview's newest-frame hub, a live client needs every frame from a keyframe on (each
// depends on the one before): each client has its own short queue; one that falls behind by
// more than `queueLimit` frames is cut back to the next keyframe (and one is asked for), so
// a slow client skips, never queues without bound, and never slows the others.

import CameraCore
import Movie
import SystemSupport

/// One access unit of the live stream, as it goes to clients (immutable, shared by all).
public final class LiveFragment: Sendable {
    public let unit: AccessUnit
    /// The fMP4 fragment (moof + mdat) holding the unit.
    public let mp4: [UInt8]

    public init(unit: AccessUnit, mp4: [UInt8]) {
        self.unit = unit
        self.mp4 = mp4
    }
}

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

    public enum Next: Sendable {
        /// The current encoder's init segment (the fMP4 client's first bytes).
        case initSegment([UInt8])
        case fragment(LiveFragment)
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
        var queue: [LiveFragment] = []
        /// Joined the stream at a keyframe (fragments before it are not queued).
        var synced = false
        /// The generation whose init segment this client was sent.
        var generation: Int?
    }

    private struct State {
        var initSegment: [UInt8]?
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
    public func subscribe(_ id: ObjectIdentifier, kind: String, feed: ObjectIdentifier? = nil,
                          wake: @escaping @Sendable () -> Void) {
        state.withLock { s in
            s.clients[id] = Client(wake: wake, feed: feed, kind: kind)
            s.keyframeWanted = true
        }
    }

    public func unsubscribe(_ id: ObjectIdentifier) {
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

    /// A new encoder starts (a launch, a new format): its init segment. Clients of the old
    /// one end their streams (a player cannot take a second moov mid-stream); new ones start here.
    func start(initSegment: [UInt8], info: LiveStreamInfo) {
        let wake = state.withLock { s -> [@Sendable () -> Void] in
            s.generation += 1
            s.initSegment = initSegment
            s.info = info
            return s.clients.values.map(\.wake)
        }
        for w in wake { w() }
    }

    func publish(_ fragment: LiveFragment) {
        let wake = state.withLock { s -> [@Sendable () -> Void] in
            var wake: [@Sendable () -> Void] = []
            // The clients are changed in place (through `values`): no copy of the table or
            // of a client's queue per frame.
            var i = s.clients.values.startIndex
            while i != s.clients.values.endIndex {
                defer { s.clients.values.formIndex(after: &i) }
                guard !s.clients.values[i].moved, s.clients.values[i].generation == s.generation else { continue }
                if !s.clients.values[i].synced {
                    guard fragment.unit.keyframe else { continue }
                    s.clients.values[i].synced = true
                }
                if s.clients.values[i].queue.count >= Self.queueLimit {  // too far behind: again from the next keyframe
                    s.clients.values[i].queue.removeAll()
                    s.clients.values[i].synced = false
                    s.keyframeWanted = true
                    continue
                }
                s.clients.values[i].queue.append(fragment)
                wake.append(s.clients.values[i].wake)
            }
            return wake
        }
        for w in wake { w() }
    }

    /// What client `id` sends next: the init segment first, then its fragments in order (an
    /// RTP client skips the init segment and sends each fragment's access unit).
    public func next(_ id: ObjectIdentifier) -> Next {
        state.withLock { s in
            guard let c = s.clients.index(forKey: id) else { return .end }
            if s.clients.values[c].moved { return .moved }
            guard let sent = s.clients.values[c].generation else {
                guard let initSegment = s.initSegment else { return .wait }
                s.clients.values[c].generation = s.generation
                return .initSegment(initSegment)
            }
            guard sent == s.generation else { return .end }
            guard !s.clients.values[c].queue.isEmpty else { return .wait }
            return .fragment(s.clients.values[c].queue.removeFirst())
        }
    }
}
