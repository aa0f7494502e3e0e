// Fans session events out to Server-Sent-Events clients. Events are typed values; the HTTP
// edge encodes them. Each subscriber keeps the newest `state` of each camera (older ones are
// superseded, so a slow client never piles them up) and every `photo` event in order. Every
// camera's session publishes into the one hub; a subscriber may take one camera's only.

import Movie
import Subscriptions
import SystemSupport

/// A movie started or finished (with why, and the movie kept).
public struct RecordingEvent: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable { case started, finished }
    public var camera: String?
    public var event: Kind
    public var id: String
    public var reason: RecordingEndReason?
    public var movie: MovieInfo?
    public var message: String?

    public init(camera: String?, event: Kind, id: String, reason: RecordingEndReason? = nil,
                movie: MovieInfo? = nil, message: String? = nil) {
        self.camera = camera
        self.event = event
        self.id = id
        self.reason = reason
        self.movie = movie
        self.message = message
    }

    /// A finished event spells `reason` and `movie` out (null when nothing was kept).
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(camera, forKey: .camera)
        try c.encode(event, forKey: .event)
        try c.encode(id, forKey: .id)
        if event == .finished {
            try c.encode(reason, forKey: .reason)
            try c.encode(movie, forKey: .movie)
            try c.encodeIfPresent(message, forKey: .message)
        }
    }
}

/// Retention deleted a stored movie or photo (issue 28): which, and which limit made it go.
public struct DeletionEvent: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable { case movie, photo }
    public enum Reason: String, Sendable, Codable { case maxBytes, maxAge, minFreeBytes }
    public var kind: Kind
    public var id: String
    public var camera: String?
    public var reason: Reason
    public var bytes: Int64

    public init(kind: Kind, id: String, camera: String?, reason: Reason, bytes: Int64) {
        self.kind = kind
        self.id = id
        self.camera = camera
        self.reason = reason
        self.bytes = bytes
    }
}

public enum SessionEvent: Sendable, Equatable {
    case state(SessionState)
    case photo(PhotoInfo)
    case recording(RecordingEvent)
    case metadata(MetadataEvent)
    case motion(MotionEvent)
    case deleted(DeletionEvent)
    /// A microphone's level, ten a second: only for subscribers that asked (`levels`).
    case level(LevelEvent)

    /// The camera the event is about.
    public var camera: String? {
        switch self {
        case .state(let s): s.camera?.id
        case .photo(let p): p.camera
        case .recording(let r): r.camera
        case .metadata(let m): m.camera
        case .motion(let m): m.camera
        case .deleted(let d): d.camera
        case .level(let l): l.camera
        }
    }

    /// A newer state of the same camera makes an older one pointless, and so does a newer
    /// `moving` of its motion an older one still waiting.
    func supersedes(_ older: SessionEvent) -> Bool {
        if case .state = self, case .state = older { return camera == older.camera }
        if case .level = self, case .level = older { return camera == older.camera }
        if case .motion(let new) = self, new.event == .moving, case .motion(let old) = older, old.event == .moving {
            return camera == older.camera
        }
        return false
    }
}

public final class EventHub: Sendable {
    private struct Subscriber {
        var pending: [SessionEvent] = []
        var wake: (@Sendable () -> Void)?
        /// Only this camera's events (nil: every camera's).
        var camera: String?
        /// What it is, for the state's counts (`sse`, `mqtt`).
        var kind: String
        /// Whether it takes the microphones' level readings.
        var levels = false
    }

    private let subscribers = Locked([ObjectIdentifier: Subscriber]())

    public init() {}

    public var subscriberCount: Int { subscribers.withLock { $0.count } }

    // The raw API below is this file's only: every client is an `EventSubscription`.
    fileprivate func subscribe(_ id: ObjectIdentifier, initial: [SessionEvent], camera: String?, kind: String, levels: Bool) {
        subscribers.withLock { $0[id] = Subscriber(pending: initial, camera: camera, kind: kind, levels: levels) }
    }

    /// A subscription to the events (every camera's, or `camera`'s), `initial` first; `kind`
    /// names it in the state (`sse`, `mqtt`). Subscribed when made: nothing published after
    /// this is missed. `levels`: the microphones' level readings too (ten a second each).
    public func subscription(initial: [SessionEvent], camera: String? = nil, kind: String = "sse",
                             levels: Bool = false) -> EventSubscription {
        EventSubscription(hub: self, initial: initial, camera: camera, kind: kind, levels: levels)
    }

    /// The subscribers that receive `camera`'s events, by kind.
    public func clientCounts(camera: String) -> [String: Int] {
        subscribers.withLock { all in
            all.values.reduce(into: [:]) { counts, s in
                if s.camera == nil || s.camera == camera { counts[s.kind, default: 0] += 1 }
            }
        }
    }

    /// The subscribers that take `camera`'s level readings.
    public func levelClientCount(camera: String) -> Int {
        subscribers.withLock { all in all.values.filter { $0.levels && ($0.camera == nil || $0.camera == camera) }.count }
    }

    fileprivate func unsubscribe(_ id: ObjectIdentifier) { subscribers.withLock { _ = $0.removeValue(forKey: id) } }

    /// Takes the subscriber's next event, or registers `wake` for when one arrives.
    fileprivate func next(_ id: ObjectIdentifier, wake: @escaping @Sendable () -> Void) -> SessionEvent? {
        subscribers.withLock { all -> SessionEvent? in
            guard all[id] != nil else { return nil }
            if !all[id]!.pending.isEmpty { return all[id]!.pending.removeFirst() }
            all[id]!.wake = wake
            return nil
        }
    }

    public func publish(_ event: SessionEvent) {
        let wakes = subscribers.withLock { all -> [@Sendable () -> Void] in
            var wakes: [@Sendable () -> Void] = []
            for id in all.keys {
                if let only = all[id]!.camera, only != event.camera { continue }
                if case .level = event, !all[id]!.levels { continue }
                all[id]!.pending.removeAll { event.supersedes($0) }
                all[id]!.pending.append(event)
                if let w = all[id]!.wake { wakes.append(w); all[id]!.wake = nil }
            }
            return wakes
        }
        for w in wakes { w() }  // outside the lock
    }
}

/// One client of the events (an SSE stream, the MQTT bridge): each event once, in order, a
/// newer state of a camera replacing one not yet taken.
public final class EventSubscription: Subscription, Sendable {
    private let hub: EventHub
    private let wake = Locked<(@Sendable () -> Void)?>(nil)
    private var id: ObjectIdentifier { ObjectIdentifier(self) }

    init(hub: EventHub, initial: [SessionEvent], camera: String?, kind: String, levels: Bool) {
        self.hub = hub
        hub.subscribe(ObjectIdentifier(self), initial: initial, camera: camera, kind: kind, levels: levels)
    }

    public func attach(wake: @escaping @Sendable () -> Void) { self.wake.withLock { $0 = wake } }

    public func next() -> Pull<SessionEvent> {
        guard let wake = wake.withLock({ $0 }) else { return .wait }
        return hub.next(id, wake: wake).map { .item($0) } ?? .wait
    }

    public func cancel() {
        wake.withLock { $0 = nil }
        hub.unsubscribe(id)
    }

    deinit { hub.unsubscribe(id) }
}
