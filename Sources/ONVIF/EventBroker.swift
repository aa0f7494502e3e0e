// The motion detector's state as ONVIF events: each video source's motion is a property
// (ONVIF Core's "initialized / changed" semantics), announced on two topics, and held for
// each subscription until it is taken: by its client's PullMessages (a pull point), or by the
// device's own delivery to the consumer's address (a push subscription, WS-BaseNotification's
// Subscribe — PushDelivery.swift). A subscription that is not renewed before its term ends is
// dropped, and there are at most `maxPullPoints` of them, pull and push together, so a client
// that forgets its subscriptions cannot make the device keep queues (or POSTs) without end.

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

public final class EventBroker: Sendable {
    public let maxPullPoints: Int
    /// Messages a pull point keeps for its client; beyond it the oldest go.
    let maxQueue: Int

    private struct PullPoint {
        var topics: Set<MotionTopic>
        var termination: Double
        /// A push subscription's consumer (where its Notify messages are POSTed); nil for a
        /// pull point.
        var consumer: String?
        var queue: [EventMessage] = []
        /// A PullMessages waiting for a message: its token and how to wake it.
        var waiter: (token: Int, wake: CheckedContinuation<Void, Never>)?
    }

    private struct State {
        /// Each source's motion, the property's current value.
        var moving: [String: (value: Bool, since: Double)] = [:]
        var sources: [String] = []
        var points: [Int: PullPoint] = [:]
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

    /// A source started or stopped moving: a Changed message on every topic, for every pull
    /// point that takes it. The same value again is not a change.
    public func motion(source: String, moving: Bool, at time: Double) {
        let wakes = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            guard s.moving[source]?.value != moving else { return [] }
            s.moving[source] = (moving, time)
            var wakes: [CheckedContinuation<Void, Never>] = []
            for id in s.points.keys {
                for topic in MotionTopic.allCases where s.points[id]!.topics.contains(topic) {
                    s.points[id]!.queue.append(EventMessage(topic: topic, source: source, moving: moving, time: time, operation: .changed))
                }
                let excess = s.points[id]!.queue.count - maxQueue
                if excess > 0 { s.points[id]!.queue.removeFirst(excess) }
                if let w = s.points[id]!.waiter { wakes.append(w.wake); s.points[id]!.waiter = nil }
            }
            return wakes
        }
        for w in wakes { w.resume() }
    }

    /// The pull points alive now (for the state and tests).
    public func pullPointCount(now: Double) -> Int { sweep(now: now); return state.withLock { $0.points.count } }

    // MARK: - The events service's operations

    /// A new subscription taking `topics`, its first messages each source's current value
    /// (Initialized): a pull point, or a push subscription when a consumer is given. Nil when
    /// `maxPullPoints` are alive.
    func create(topics: Set<MotionTopic>, termination: Double, now: Double, consumer: String? = nil) -> Int? {
        sweep(now: now)
        return state.withLock { s -> Int? in
            guard s.points.count < maxPullPoints else { return nil }
            let id = s.nextID
            s.nextID += 1
            s.points[id] = PullPoint(topics: topics, termination: termination, consumer: consumer, queue: Self.initialized(s, topics))
            return id
        }
    }

    /// The current value of every property, again (SetSynchronizationPoint). False when the
    /// pull point is unknown.
    func synchronize(_ id: Int, now: Double) -> Bool {
        sweep(now: now)
        let (known, waiter) = state.withLock { s -> (Bool, CheckedContinuation<Void, Never>?) in
            guard let p = s.points[id] else { return (false, nil) }
            s.points[id]!.queue += Self.initialized(s, p.topics)
            s.points[id]!.waiter = nil
            return (true, p.waiter?.wake)
        }
        waiter?.resume()
        return known
    }

    /// A new term; nil when the pull point is unknown.
    func renew(_ id: Int, termination: Double, now: Double) -> Double? {
        sweep(now: now)
        return state.withLock { s in
            guard s.points[id] != nil else { return nil }
            s.points[id]!.termination = termination
            return termination
        }
    }

    /// Ends a pull point (a waiting pull answers with nothing). False when unknown.
    func unsubscribe(_ id: Int, now: Double) -> Bool {
        sweep(now: now)
        let removed = state.withLock { $0.points.removeValue(forKey: id) }
        removed?.waiter?.wake.resume()
        return removed != nil
    }

    func termination(_ id: Int) -> Double? { state.withLock { $0.points[id]?.termination } }

    /// A push subscription's consumer; nil for a pull point or an unknown id.
    func consumer(_ id: Int) -> String? { state.withLock { $0.points[id]?.consumer } }

    /// Ends every subscription (the server stops): waiting pulls answer with nothing and every
    /// push subscription's delivery ends after the POST it is in.
    public func close() {
        let waiting = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            defer { s.points.removeAll() }
            return s.points.values.compactMap { $0.waiter?.wake }
        }
        for w in waiting { w.resume() }
    }

    /// Up to `limit` messages, waiting up to `timeout` seconds for the first. Nil when the
    /// pull point is unknown (or ended while waiting).
    func pull(_ id: Int, limit: Int, timeout: Double, now: Double) async -> [EventMessage]? {
        sweep(now: now)
        switch take(id, limit) {
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
            let resumeNow = state.withLock { s -> [CheckedContinuation<Void, Never>] in
                guard let p = s.points[id], p.queue.isEmpty else { return [c] }
                // A second pull on the same point: the first answers with what it has (nothing).
                let earlier = p.waiter?.wake
                s.points[id]!.waiter = (token, c)
                return earlier.map { [$0] } ?? []
            }
            for r in resumeNow { r.resume() }
        }
        timer.cancel()
        return take(id, limit)
    }

    // MARK: - Inside

    private func wake(_ id: Int, token: Int) {
        let w = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let waiter = s.points[id]?.waiter, waiter.token == token else { return nil }
            s.points[id]!.waiter = nil
            return waiter.wake
        }
        w?.resume()
    }

    private func take(_ id: Int, _ limit: Int) -> [EventMessage]? {
        state.withLock { s in
            guard let p = s.points[id] else { return nil }
            let n = min(max(1, limit), p.queue.count)
            s.points[id]!.queue.removeFirst(n)
            return Array(p.queue.prefix(n))
        }
    }

    /// Drops the pull points whose term has ended, waking their waiting pulls.
    private func sweep(now: Double) {
        let ended = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            let gone = s.points.filter { $0.value.termination < now }
            for id in gone.keys { s.points.removeValue(forKey: id) }
            return gone.values.compactMap { $0.waiter?.wake }
        }
        for w in ended { w.resume() }
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
