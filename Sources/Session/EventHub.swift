// Fans session events out to Server-Sent-Events clients. Events are typed values; the HTTP
// edge encodes them. Each subscriber keeps the newest `state` of each camera (older ones are
// superseded, so a slow client never piles them up) and every `photo` event in order. Every
// camera's session publishes into the one hub; a subscriber may take one camera's only.

import Synchronization

public enum SessionEvent: Sendable, Equatable {
    case state(SessionState)
    case photo(PhotoInfo)

    /// The camera the event is about.
    public var camera: String? {
        switch self {
        case .state(let s): s.camera?.id
        case .photo(let p): p.camera
        }
    }

    /// A newer state of the same camera makes an older one pointless.
    func supersedes(_ older: SessionEvent) -> Bool {
        if case .state = self, case .state = older { return camera == older.camera }
        return false
    }
}

public final class EventHub: Sendable {
    private struct Subscriber {
        var pending: [SessionEvent] = []
        var wake: (@Sendable () -> Void)?
        /// Only this camera's events (nil: every camera's).
        var camera: String?
    }

    private let subscribers = Mutex([ObjectIdentifier: Subscriber]())

    public init() {}

    public var subscriberCount: Int { subscribers.withLock { $0.count } }

    public func subscribe(_ id: ObjectIdentifier, initial: [SessionEvent], camera: String? = nil) {
        subscribers.withLock { $0[id] = Subscriber(pending: initial, camera: camera) }
    }

    public func subscribe(_ id: ObjectIdentifier, initial: SessionEvent?) {
        subscribe(id, initial: initial.map { [$0] } ?? [])
    }

    public func unsubscribe(_ id: ObjectIdentifier) { subscribers.withLock { _ = $0.removeValue(forKey: id) } }

    /// Takes the subscriber's next event, or registers `wake` for when one arrives.
    public func next(_ id: ObjectIdentifier, wake: @escaping @Sendable () -> Void) -> SessionEvent? {
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
                all[id]!.pending.removeAll { event.supersedes($0) }
                all[id]!.pending.append(event)
                if let w = all[id]!.wake { wakes.append(w); all[id]!.wake = nil }
            }
            return wakes
        }
        for w in wakes { w() }  // outside the lock
    }
}
