// Push subscriptions' delivery (WS-BaseNotification's Subscribe): each push subscription has
// one task that takes what the broker queues for it — as a pull point's client would, waiting
// for the first message — and POSTs it to the consumer as one Notify. One POST at a time per
// subscription, so a slow consumer delays only its own messages; what a consumer did not take
// (refused, unreachable, timed out) is reported once per run of failures and not sent again:
// a motion property's next change, or SetSynchronizationPoint, says the state anew. The task
// ends when the subscription does (Unsubscribe, its term ended, the server stopped).

import SOAP

public struct PushDelivery: Sendable {
    public var post: NotificationPost
    /// Wall-clock seconds since 1970 (the broker's terms are on it).
    public var clock: @Sendable () -> Double
    /// A consumer stopped taking Notify messages (once per run of failures), or took them again.
    public var report: @Sendable (_ consumer: String, _ failure: String?) -> Void
    /// How long a delivery waits for a message before it looks again at its subscription.
    static let wait = 30.0

    public init(post: @escaping NotificationPost, clock: @escaping @Sendable () -> Double,
                report: @escaping @Sendable (_ consumer: String, _ failure: String?) -> Void = { _, _ in }) {
        self.post = post
        self.clock = clock
        self.report = report
    }

    /// Delivers subscription `id`'s messages to `consumer` until the subscription ends.
    func deliver(_ broker: EventBroker, id: Int, consumer: String, subscription: String) async {
        var failing = false
        while let messages = await broker.pull(id, limit: 64, timeout: Self.wait, now: clock()) {
            if messages.isEmpty { continue }
            let outcome = await post(consumer, EventsService.notify(messages, subscription: subscription))
            let failure: String? = switch outcome {
            case .answered(let status) where (200..<300).contains(status): nil
            case .answered(let status): "the consumer \(consumer) answered HTTP \(status)"
            case .failed(let why): why
            }
            if (failure != nil) != failing { report(consumer, failure) }
            failing = failure != nil
        }
    }
}
