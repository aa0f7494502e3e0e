// Fans session events out to Server-Sent-Events clients. Each subscriber keeps the newest
// `state` (older ones are superseded, so a slow client never piles them up) and every
// `photo` event in order.

import Foundation

public final class EventHub: @unchecked Sendable {
    public struct Event: Sendable, Equatable {
        public var name: String
        public var data: String
        public init(name: String, data: String) { self.name = name; self.data = data }
    }

    private final class Subscriber {
        var pending: [Event] = []
        var wake: (@Sendable () -> Void)?
    }

    private let lock = NSLock()
    private var subscribers: [ObjectIdentifier: Subscriber] = [:]

    public init() {}

    public var subscriberCount: Int { lock.withLock { subscribers.count } }

    public func subscribe(_ id: ObjectIdentifier, initial: Event?) {
        lock.withLock {
            let s = Subscriber()
            if let initial { s.pending.append(initial) }
            subscribers[id] = s
        }
    }

    public func unsubscribe(_ id: ObjectIdentifier) { lock.withLock { _ = subscribers.removeValue(forKey: id) } }

    /// Takes the subscriber's next event, or registers `wake` for when one arrives.
    public func next(_ id: ObjectIdentifier, wake: @escaping @Sendable () -> Void) -> Event? {
        lock.withLock {
            guard let s = subscribers[id] else { return nil }
            if !s.pending.isEmpty { return s.pending.removeFirst() }
            s.wake = wake
            return nil
        }
    }

    public func publish(_ event: Event) {
        let wakes = lock.withLock { () -> [@Sendable () -> Void] in
            var wakes: [@Sendable () -> Void] = []
            for s in subscribers.values {
                if event.name == "state" { s.pending.removeAll { $0.name == "state" } }
                s.pending.append(event)
                if let w = s.wake { wakes.append(w); s.wake = nil }
            }
            return wakes
        }
        for w in wakes { w() }
    }
}
