// The motion detector's state as ONVIF events: each video source's motion is a property
// (ONVIF Core's "initialized / changed" semantics), announced on two topics, and held for
// each subscription until it is taken: by its client's PullMessages (a pull point), or by the
// device's own delivery to the consumer's address (a push subscription, WS-BaseNotification's
// Subscribe — PushDelivery.swift). Each subscription's messages are an `EventQueue`, of the
// shape every client of every output has (Subscriptions): the broker is its hub, as the event
// hub is an SSE client's, and keeps what is ONVIF's — the properties, the terms, the limit and
// the one PullMessages that waits. A subscription that is not renewed before its term ends is
// dropped, and there are at most `maxPullPoints` of them, pull and push together, so a client
// that forgets its subscriptions cannot make the device keep queues (or POSTs) without end.

import Subscriptions
import SystemSupport

/// The topics this device announces: the two NVRs read for motion.
enum MotionTopic: CaseIterable, Sendable {
    /// tns1:RuleEngine/CellMotionDetector/Motion, data IsMotion (Home Assistant, most NVRs).
    case cellMotion
    /// tns1:VideoSource/MotionAlarm, data State (Profile S's alarm).
    case motionAlarm

    var path: [String] {
        switch self {
        case .cellMotion: ["RuleEngine", "CellMotionDetector", "Motion"]
        case .motionAlarm: ["VideoSource", "MotionAlarm"]
        }
    }

    /// The topic as a message writes it: the `tns1:` prefix is text a client reads.
    var text: String { "tns1:" + path.joined(separator: "/") }
}

/// One message for one pull point.
struct EventMessage: Sendable, Equatable {
    enum Operation: String, Sendable { case initialized = "Initialized", changed = "Changed" }
    var topic: MotionTopic
    var source: String
    var moving: Bool
    /// Wall-clock seconds.
    var time: Double
    var operation: Operation
}

/// One subscription's messages: a pull point's (its client's PullMessages take them) or a
/// push subscription's (its delivery takes them), the oldest dropped beyond the broker's
/// `maxQueue`. It ends (`.end` once taken) when its subscription does.
final class EventQueue: Subscription, Sendable {
    typealias Item = EventMessage
    let topics: Set<MotionTopic>
    /// A push subscription's consumer (where its Notify messages are POSTed); nil for a pull point.
    let consumer: String?
    private struct State {
        var messages: [EventMessage]
        var wake: (@Sendable () -> Void)?
        var ended = false
    }
    private let state: Locked<State>
    private let limit: Int
    private let leave: @Sendable () -> Void

    fileprivate init(topics: Set<MotionTopic>, consumer: String?, initial: [EventMessage], limit: Int, leave: @escaping @Sendable () -> Void) {
        self.topics = topics
        self.consumer = consumer
        self.limit = limit
        self.leave = leave
        state = Locked(State(messages: initial))
    }

    func attach(wake: @escaping @Sendable () -> Void) { state.withLock { $0.wake = wake } }

    func next() -> Pull<EventMessage> {
        state.withLock { s in
            if !s.messages.isEmpty { return .item(s.messages.removeFirst()) }
            return s.ended ? .end : .wait
        }
    }

    var hasMessages: Bool { state.withLock { !$0.messages.isEmpty } }

    /// Its client is gone: the subscription ends.
    func cancel() { leave() }

    /// The broker's side: more messages (its carrier woken outside the lock).
    fileprivate func add(_ messages: [EventMessage]) {
        let wake = state.withLock { s -> (@Sendable () -> Void)? in
            guard !s.ended else { return nil }
            s.messages += messages
            if s.messages.count > limit { s.messages.removeFirst(s.messages.count - limit) }
            return s.wake
        }
        wake?()
    }

    /// The subscription ended (unsubscribed, its term over, the server stopping).
    fileprivate func end() {
        let wake = state.withLock { s -> (@Sendable () -> Void)? in
            defer { s.ended = true }
            return s.ended ? nil : s.wake
        }
        wake?()
    }
}

public final class EventBroker: Sendable {
    public let maxPullPoints: Int
    /// Messages a pull point keeps for its client; beyond it the oldest go.
    let maxQueue: Int

    private struct Entry {
        let queue: EventQueue
        var termination: Double
    }

    private struct State {
        /// Each source's motion, the property's current value.
        var moving: [String: (value: Bool, since: Double)] = [:]
        var sources: [String] = []
        var points: [Int: Entry] = [:]
        /// The PullMessages waiting on a subscription: its token and how to wake it.
        var waiters: [Int: (token: Int, wake: CheckedContinuation<Void, Never>)] = [:]
        var nextID = 1
        var nextToken = 1
    }

    private let state = Locked(State())

    /// What a PullMessages' wait runs on: the system's time in the server, a test's clock.
    private let timekeeper: any Timekeeper

    public init(maxPullPoints: Int = 16, maxQueue: Int = 256, timekeeper: any Timekeeper = SystemTimekeeper()) {
        self.maxPullPoints = maxPullPoints
        self.maxQueue = maxQueue
        self.timekeeper = timekeeper
    }

    /// The video sources whose motion is announced (the cameras' ids), not moving until told.
    public func declare(sources: [String], now: Double) {
        state.withLock { s in
            s.sources = sources
            for id in sources where s.moving[id] == nil { s.moving[id] = (false, now) }
        }
    }

    /// A source started or stopped moving: a Changed message on every topic, for every
    /// subscription that takes it. The same value again is not a change.
    public func motion(source: String, moving: Bool, at time: Double) {
        let queues = state.withLock { s -> [EventQueue] in
            guard s.moving[source]?.value != moving else { return [] }
            s.moving[source] = (moving, time)
            return s.points.values.map(\.queue)
        }
        for q in queues {
            q.add(MotionTopic.allCases.filter(q.topics.contains).map {
                EventMessage(topic: $0, source: source, moving: moving, time: time, operation: .changed)
            })
        }
    }

    /// The pull points alive now (for the state and tests).
    public func pullPointCount(now: Double) -> Int { sweep(now: now); return state.withLock { $0.points.count } }

    // MARK: - The events service's operations

    /// A new subscription taking `topics`, its first messages each source's current value
    /// (Initialized): a pull point, or a push subscription when a consumer is given. Nil when
    /// `maxPullPoints` are alive. Its carrier is whoever takes its messages by `pull`.
    func create(topics: Set<MotionTopic>, termination: Double, now: Double, consumer: String? = nil) -> Int? {
        sweep(now: now)
        let made = state.withLock { s -> (Int, EventQueue)? in
            guard s.points.count < maxPullPoints else { return nil }
            let id = s.nextID
            s.nextID += 1
            let queue = EventQueue(topics: topics, consumer: consumer, initial: Self.initialized(s, topics), limit: maxQueue) { [weak self] in
                self?.end(id)
            }
            s.points[id] = Entry(queue: queue, termination: termination)
            return (id, queue)
        }
        guard let (id, queue) = made else { return nil }
        queue.attach { [weak self] in self?.wake(id, token: nil) }
        return id
    }

    /// The current value of every property, again (SetSynchronizationPoint). False when the
    /// subscription is unknown.
    func synchronize(_ id: Int, now: Double) -> Bool {
        sweep(now: now)
        guard let (queue, again) = state.withLock({ s in s.points[id].map { ($0.queue, Self.initialized(s, $0.queue.topics)) } }) else {
            return false
        }
        queue.add(again)
        return true
    }

    /// A new term; nil when the subscription is unknown.
    func renew(_ id: Int, termination: Double, now: Double) -> Double? {
        sweep(now: now)
        return state.withLock { s in
            guard s.points[id] != nil else { return nil }
            s.points[id]!.termination = termination
            return termination
        }
    }

    /// Ends a subscription (a waiting pull answers what is left, if anything). False when unknown.
    func unsubscribe(_ id: Int, now: Double) -> Bool {
        sweep(now: now)
        return end(id)
    }

    func termination(_ id: Int) -> Double? { state.withLock { $0.points[id]?.termination } }

    /// A push subscription's consumer; nil for a pull point or an unknown id.
    func consumer(_ id: Int) -> String? { state.withLock { $0.points[id]?.queue.consumer } }

    /// Ends every subscription (the server stops): waiting pulls answer with nothing and every
    /// push subscription's delivery ends after the POST it is in.
    public func close() {
        let all = state.withLock { s -> [EventQueue] in
            defer { s.points.removeAll() }
            return s.points.values.map(\.queue)
        }
        for q in all { q.end() }
    }

    /// Up to `limit` messages, waiting up to `timeout` seconds for the first. Nil when the
    /// subscription is unknown (or ended while waiting).
    func pull(_ id: Int, limit: Int, timeout: Double, now: Double) async -> [EventMessage]? {
        sweep(now: now)
        guard let queue = state.withLock({ $0.points[id]?.queue }) else { return nil }
        switch take(queue, limit) {
        case nil: return nil
        case let got? where !got.isEmpty: return got
        default: break
        }
        let token = state.withLock { s in defer { s.nextToken += 1 }; return s.nextToken }
        let timer = Task { [timekeeper] in
            guard (try? await timekeeper.sleep(max(0, timeout))) != nil else { return }  // answered before its timeout
            self.wake(id, token: token)
        }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let waiting = state.withLock { s -> [CheckedContinuation<Void, Never>] in
                guard s.points[id] != nil else { return [c] }  // ended meanwhile
                // A second pull on the same subscription: the first answers with what it has (nothing).
                let earlier = s.waiters[id]?.wake
                s.waiters[id] = (token, c)
                return earlier.map { [$0] } ?? []
            }
            for r in waiting { r.resume() }
            // A message that came between the look and the wait woke no one: it answers now.
            if queue.hasMessages { wake(id, token: token) }
        }
        timer.cancel()
        return take(queue, limit)
    }

    // MARK: - Inside

    /// Resumes the pull waiting on `id`: any (a message came, or the subscription ended), or
    /// only the one with `token` (its timeout).
    private func wake(_ id: Int, token: Int?) {
        let w = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let waiter = s.waiters[id], token == nil || waiter.token == token else { return nil }
            s.waiters[id] = nil
            return waiter.wake
        }
        w?.resume()
    }

    /// Up to `limit` of its messages ([] when none); nil when it has ended and nothing is left.
    private func take(_ queue: EventQueue, _ limit: Int) -> [EventMessage]? {
        var got: [EventMessage] = []
        while got.count < max(1, limit) {
            switch queue.next() {
            case .item(let m): got.append(m)
            case .wait: return got
            case .end: return got.isEmpty ? nil : got
            }
        }
        return got
    }

    /// Takes subscription `id` out and ends it (its waiting pull woken by its queue). False when unknown.
    @discardableResult
    private func end(_ id: Int) -> Bool {
        guard let entry = state.withLock({ $0.points.removeValue(forKey: id) }) else { return false }
        entry.queue.end()
        wake(id, token: nil)
        return true
    }

    /// Drops the subscriptions whose term has ended, waking their waiting pulls.
    private func sweep(now: Double) {
        let gone = state.withLock { s in s.points.filter { $0.value.termination < now }.map(\.key) }
        for id in gone { end(id) }
    }

    private static func initialized(_ s: State, _ topics: Set<MotionTopic>) -> [EventMessage] {
        s.sources.flatMap { source in
            MotionTopic.allCases.filter(topics.contains).map { topic in
                let m = s.moving[source] ?? (false, 0)
                return EventMessage(topic: topic, source: source, moving: m.value, time: m.since, operation: .initialized)
            }
        }
    }
}
