// The one shape every client of every output takes, whatever carries it: an MJPEG viewer's
// parts, a live.mp4 client's fragments, an SSE client's events, an RTSP media's or a WebRTC
// peer's access units, the MQTT bridge's events. The output's hub makes the subscription
// (Session: FrameHub, LiveHub, EventHub, joined through a SessionFeed); the transport pumps it
// (HTTPServer's streamed responses, Streaming's feeds, the MQTT bridge) — no adapter between
// them on the way of each item. A leaf module, so every transport imports it directly and
// none imports the hubs'.
//
// Pull, not push: the transport asks for the next item when it can send one (a socket with
// room, an appsrc), so a slow client skips what it could not take instead of queueing it. An
// item that is not there yet answers `.wait`, and the subscription calls the `wake` it was
// attached with when there may be more. Following the main camera is inside the
// subscription: a switch moves it to the new camera's hub before its next item, and the
// transport never knows.

/// What a subscription gives next.
public enum Pull<Item> {
    case item(Item)
    /// Nothing now: `wake` will be called when there may be more.
    case wait
    /// Done for good (the stream restarted at a new format, the server stops).
    case end
}

/// Who calls what: `attach`, `next` and `cancel` are its carrier's — the one pump that carries
/// it (a connection's content reader, a FeedPump, the MQTT bridge) — called one at a time and
/// in that order, never two at once (a FeedPump with two wakers still has one drainer). `wake`
/// may come from any thread at any time. An implementation may rely on this and keep what
/// only its carrier touches without a lock (PreviewSubscription's cursor, the reason for its
/// `@unchecked Sendable`); everything its hub touches from other threads it must lock.
public protocol Subscription<Item>: AnyObject, Sendable {
    associatedtype Item
    /// Called once, before the first `next`; `wake` may be called on any thread, any time.
    func attach(wake: @escaping @Sendable () -> Void)
    /// Never blocks.
    func next() -> Pull<Item>
    /// The client is gone: leave the hub. Called once; `next` is not called after it.
    func cancel()
}

/// One encoded access unit of a live stream (Annex B, SPS and PPS before each IDR), with its
/// capture time (Unix seconds, the clock the microphone's packets are stamped on too) and
/// the encoder's 90 kHz ticks: what an RTP transport sends.
public struct EncodedUnit: Sendable {
    public let bytes: [UInt8]
    public let pts: Int64
    public let time: Double
    public let keyframe: Bool

    public init(bytes: [UInt8], pts: Int64, time: Double, keyframe: Bool) {
        self.bytes = bytes
        self.pts = pts
        self.time = time
        self.keyframe = keyframe
    }
}

/// A live stream's access units, and the way back to its encoder: a transport that needs a
/// keyframe (a new RTSP client, a browser's PLI) asks for one.
public protocol UnitSubscription: Subscription<EncodedUnit> {
    func requestKeyframe()
}

extension Subscription {
    /// The same subscription, each item transformed as it is taken (an event as its SSE message).
    public func map<T>(_ transform: @escaping @Sendable (Item) -> T) -> MappedSubscription<Item, T> {
        MappedSubscription(self, transform)
    }
}

public final class MappedSubscription<Source, Item>: Subscription, Sendable {
    private let base: any Subscription<Source>
    private let transform: @Sendable (Source) -> Item

    public init(_ base: any Subscription<Source>, _ transform: @escaping @Sendable (Source) -> Item) {
        self.base = base
        self.transform = transform
    }

    public func attach(wake: @escaping @Sendable () -> Void) { base.attach(wake: wake) }

    public func next() -> Pull<Item> {
        switch base.next() {
        case .item(let x): .item(transform(x))
        case .wait: .wait
        case .end: .end
        }
    }

    public func cancel() { base.cancel() }
}
