// Fans session events out to Server-Sent-Events clients. Events are typed values; the HTTP
// edge encodes them. Each subscriber keeps the newest `state` (older ones are superseded,
// so a slow client never piles them up) and every `photo` event in order.

import Synchronization

public enum SessionEvent: Sendable, Equatable {
    case state(SessionState)
    case photo(PhotoInfo)

    /// A newer state makes an older one pointless.
    var supersedesItsKind: Bool { if case .state = self { true } else { false } }
}

public final class EventHub: Sendable {
    private struct Subscriber {
        var pending: [SessionEvent] = []
        var wake: (@Sendable () -> Void)?
    }

    private let subscribers = Mutex([ObjectIdentifier: Subscriber]())

    public init() {}

    public var subscriberCount: Int { subscribers.withLock { $0.count } }

    public func subscribe(_ id: ObjectIdentifier, initial: SessionEvent?) {
        subscribers.withLock { $0[id] = Subscriber(pending: initial.map { [$0] } ?? []) }
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
                if event.supersedesItsKind { all[id]!.pending.removeAll { $0.supersedesItsKind } }
                all[id]!.pending.append(event)
                if let w = all[id]!.wake { wakes.append(w); all[id]!.wake = nil }
            }
            return wakes
        }
        for w in wakes { w() }  // outside the lock
    }
}
