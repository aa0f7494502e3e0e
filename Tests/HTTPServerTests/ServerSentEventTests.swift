import Foundation
import Subscriptions
import SystemSupport
import Testing
import TimeTestSupport
@testable import HTTPServer

@Suite struct ServerSentEventTests {
    @Test func serverSentEventSplitsLines() {
        let e = String(decoding: ServerSentEvent.format(event: "state", data: "{\"a\":1}\n{\"b\":2}"), as: UTF8.self)
        #expect(e == "event: state\ndata: {\"a\":1}\ndata: {\"b\":2}\n\n")
    }

    /// Events as a hub hands them: queued, the waker called on each.
    final class Events: Subscription, Sendable {
        private let state = Locked<(queue: [ServerSentEvent.Message], wake: (@Sendable () -> Void)?)>(([], nil))
        func attach(wake: @escaping @Sendable () -> Void) { state.withLock { $0.wake = wake } }
        func next() -> Pull<ServerSentEvent.Message> {
            state.withLock { s in s.queue.isEmpty ? .wait : .item(s.queue.removeFirst()) }
        }
        func cancel() {}
        func push(_ m: ServerSentEvent.Message) { state.withLock { $0.queue.append(m); return $0.wake }?() }
    }

    static func bytes(_ p: Pull<[UInt8]>) -> [UInt8]? { if case .item(let b) = p { return b }; return nil }
    static func waits(_ p: Pull<[UInt8]>) -> Bool { if case .wait = p { return true }; return false }

    /// On a clock the test moves (issue 45: time as an input): a `: keep-alive` once nothing
    /// was sent for the heartbeat (3 s), not before; an event counts as a beat; after cancel the
    /// timer is gone.
    @Test func aKeepAliveGoesOutAfterAHeartbeatOfSilenceAndAnEventCountsAsOne() async {
        let clock = ManualTimekeeper(), events = Events(), woken = Locked(0)
        let sse = ServerSentEventStream(events, heartbeat: 3, timekeeper: clock)
        sse.attach { woken.withLock { $0 += 1 } }
        #expect(Self.waits(sse.next()))
        // The timer looks once a second (half the heartbeat, at most a second).
        for second in 1...2 {
            #expect(await clock.waitForSleepers())
            clock.advance(by: 1)
            #expect(await clock.waitForSleepers())
            #expect(woken.withLock { $0 } == 0 && Self.waits(sse.next()), "\(second) s of silence: no beat yet")
        }
        clock.advance(by: 1)
        #expect(await clock.waitForSleepers())
        #expect(woken.withLock { $0 } == 1, "3 s of silence: woken for a beat")
        #expect(Self.bytes(sse.next()) == ServerSentEvent.keepAlive)
        #expect(Self.waits(sse.next()), "one beat")

        clock.advance(by: 1)
        #expect(await clock.waitForSleepers())
        events.push(.init(event: "state", data: "{}"))  // at 4 s
        #expect(Self.bytes(sse.next()) == ServerSentEvent.format(event: "state", data: "{}"))
        for _ in 1...2 {
            clock.advance(by: 1)
            #expect(await clock.waitForSleepers())
        }
        #expect(woken.withLock { $0 } == 2 && Self.waits(sse.next()), "6 s: 2 s after the event, no beat")
        clock.advance(by: 1)
        #expect(await clock.waitForSleepers())
        #expect(woken.withLock { $0 } == 3 && Self.bytes(sse.next()) == ServerSentEvent.keepAlive, "7 s: 3 s after the event")

        sse.cancel()
        clock.advance(by: 1)  // wakes the cancelled timer's sleep, if it had not been already
        let deadline = TestTime.deadline(10)
        while clock.sleeping > 0 && Date() < deadline { try? await Task.sleep(nanoseconds: 1_000_000) }
        #expect(clock.sleeping == 0, "after cancel the timer sleeps no more")
    }
}
