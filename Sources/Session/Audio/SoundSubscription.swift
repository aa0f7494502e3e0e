// A client's subscription to a camera's encoded sound (AAC or Opus), the one shape every
// client of every output takes (Subscriptions). Sound is not skipped as pictures are: a
// picture may give way to the newest, a packet of sound may not — every one is queued for the
// carrier, in order, and `next` takes the oldest. The queue is bounded: a carrier that stops
// taking holds its last `limit` packets (about five seconds of AAC), the oldest dropped.
//
// The stream (AudioEncodeStream) adds packets on the microphone's thread and wakes the
// carrier there, after each; nothing else wakes it. A carrier that is itself content to run
// on that thread (a recorder whose `submit` only queues) takes them in its wake (`deliver`).

import Movie
import Subscriptions
import SystemSupport

public final class SoundSubscription: Subscription, Sendable {
    public typealias Item = AudioPacket
    /// Packets kept for a carrier that does not take them: 240 AAC frames are 5.1 s at 48 kHz.
    static let limit = 240

    /// What the stream holds of a subscription: its queue, its wake and the track it takes.
    /// The subscription holds the stream's entry, not the other way round, so a subscription
    /// its client forgot leaves the stream as it goes.
    final class Inbox: Sendable {
        /// The packets' track it takes (nil: whatever the microphone makes, from when it runs).
        let track: AudioTrackInfo?
        private struct State {
            var packets: [AudioPacket] = []
            var wake: (@Sendable () -> Void)?
        }
        private let state = Locked(State())

        init(track: AudioTrackInfo?) { self.track = track }

        func takes(_ current: AudioTrackInfo) -> Bool { track == nil || track == current }

        /// On the microphone's thread: queues them and wakes the carrier (outside the lock).
        func add(_ packets: [AudioPacket]) {
            guard !packets.isEmpty else { return }
            let wake = state.withLock { s -> (@Sendable () -> Void)? in
                s.packets += packets
                if s.packets.count > SoundSubscription.limit { s.packets.removeFirst(s.packets.count - SoundSubscription.limit) }
                return s.wake
            }
            wake?()
        }

        func setWake(_ wake: (@Sendable () -> Void)?) { state.withLock { $0.wake = wake } }

        func take() -> AudioPacket? {
            state.withLock { s in s.packets.isEmpty ? nil : s.packets.removeFirst() }
        }
    }

    private let inbox: Inbox
    private let leave: @Sendable (Inbox) -> Void
    private let cancelled = Locked(false)

    init(_ inbox: Inbox, leave: @escaping @Sendable (Inbox) -> Void) {
        self.inbox = inbox
        self.leave = leave
    }

    /// The track its packets are in, when it asked for one.
    public var track: AudioTrackInfo? { inbox.track }

    /// Packets queued before the carrier attached are taken at its first `next` (or the wake
    /// of the next packet): the wake is never called here, so the carrier has one drainer,
    /// the microphone's thread.
    public func attach(wake: @escaping @Sendable () -> Void) { inbox.setWake(wake) }

    /// Never `.end`: a camera's sound goes on while the camera is there (a microphone stopped
    /// and reopened is heard again); the carrier ends it.
    public func next() -> Pull<AudioPacket> {
        inbox.take().map { .item($0) } ?? .wait
    }

    /// For a carrier content to take each packet on the microphone's thread as it comes (a
    /// recorder's `submit` only queues): `body` gets every packet, in order.
    public func deliver(to body: @escaping @Sendable (AudioPacket) -> Void) {
        attach { [weak self] in
            while let self, case .item(let p) = self.next() { body(p) }
        }
    }

    /// No more packets (once; also when the subscription goes).
    public func cancel() {
        guard cancelled.withLock({ c in defer { c = true }; return !c }) else { return }
        inbox.setWake(nil)
        leave(inbox)
    }

    deinit { cancel() }
}
