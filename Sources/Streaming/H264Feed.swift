// The appsrc a transport's pipeline reads, and the pump that fills it: a live stream's
// subscription (Subscriptions) pumped into the feed — each access unit (Annex B, SPS and PPS
// before each IDR) pushed on the thread that wakes it, the encoder's, as the unit is made (a
// push only queues) — until the feed closes. Nothing of the application is in between.

import CGStreamerShim
import Subscriptions
import SystemSupport

/// A C feed (CGStreamerShim's `vfg_feed`: an appsrc's pushing side, locked in C), owned here:
/// its reference released with the last holder. The one owner both kinds of feed share.
final class FeedHandle: @unchecked Sendable {  // the C feed locks itself
    let raw: OpaquePointer

    /// Takes over one reference to `raw`.
    init(_ raw: OpaquePointer) { self.raw = raw }

    deinit { vfg_feed_release(raw) }

    var isClosed: Bool { vfg_feed_closed(raw) != 0 }
}

public struct H264Feed: Sendable {
    private let handle: FeedHandle

    /// Takes over one reference to `raw`.
    init(_ raw: OpaquePointer) { handle = FeedHandle(raw) }

    public enum Pushed: Sendable, Equatable {
        case sent
        /// The pipeline asked for a keyframe (a PLI from a browser, a new RTSP client).
        case keyframeWanted
        /// The pipeline is gone; push no more.
        case closed
    }

    /// `time`: the unit's capture time (Unix seconds).
    public func push(_ bytes: [UInt8], time: Double, keyframe: Bool) -> Pushed {
        let r = bytes.withUnsafeBufferPointer { vfg_feed_push(handle.raw, $0.baseAddress, $0.count, Self.nanoseconds(time), keyframe ? 1 : 0) }
        return r < 0 ? .closed : r == 1 ? .keyframeWanted : .sent
    }

    static func nanoseconds(_ time: Double) -> Int64 { Int64((time * 1e9).rounded()) }

    public var isClosed: Bool { handle.isClosed }
}

/// The appsrc of a media's or a peer's sound: encoded packets (raw AAC frames for RTSP, Opus
/// for WebRTC), each decodable alone, on the same clock as the picture (the C side maps both
/// capture times through one clock).
public struct AudioFeed: Sendable {
    private let handle: FeedHandle

    /// Takes over one reference to `raw`.
    init(_ raw: OpaquePointer) { handle = FeedHandle(raw) }

    /// One packet captured (its first sample) at `time`, Unix seconds. False once the
    /// pipeline is gone.
    @discardableResult
    public func push(_ bytes: [UInt8], time: Double) -> Bool {
        bytes.withUnsafeBufferPointer { vfg_feed_push(handle.raw, $0.baseAddress, $0.count, H264Feed.nanoseconds(time), 1) } >= 0
    }

    public var isClosed: Bool { handle.isClosed }
}

/// An AAC-LC stream's format as RTSP describes it (RFC 3640's config is the AudioSpecificConfig).
public struct AACFormat: Sendable, Equatable {
    public var sampleRate: Int
    public var channels: Int
    public var config: [UInt8]

    public init(sampleRate: Int, channels: Int, config: [UInt8]) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.config = config
    }
}

/// Pumps a subscription into a feed until the feed closes or `stop`; `onStop` runs once, then.
/// The units are a live stream's (whose encoder a pipeline may ask for a keyframe), any stream
/// of pictures each whole alone (RTP/JPEG's: every one a keyframe), or a camera's sound
/// (encoded packets and their capture times, every one sent in order).
public final class FeedPump: Sendable {
    /// Pushes what the subscription has now; true when the feed closed meanwhile.
    private let pushAll: @Sendable () -> Bool
    private let isClosed: @Sendable () -> Bool
    private let attach: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let cancel: @Sendable () -> Void
    private let onStop: @Sendable () -> Void
    /// One drainer at a time, so units go out in order whoever wakes the pump — without a lock
    /// held across a push: a wake that comes while another thread drains is that drainer's to
    /// serve (`again`), and a stop that comes meanwhile leaves the cancel to it (`next` and
    /// `cancel` are the subscription's one caller's).
    private struct Pump {
        var stopped = false
        var draining = false
        var again = false
    }
    private let pump = Locked(Pump())
    private let alarm = Locked<Alarm?>(nil)

    private init<S: Subscription>(_ subscription: S, isClosed: @escaping @Sendable () -> Bool, onStop: @escaping @Sendable () -> Void,
                                  push: @escaping @Sendable (S.Item) -> Bool) {
        pushAll = {
            while case .item(let item) = subscription.next() {
                if !push(item) { return true }
            }
            return false
        }
        self.isClosed = isClosed
        attach = { subscription.attach(wake: $0) }
        cancel = { subscription.cancel() }
        self.onStop = onStop
    }

    public convenience init<Units: UnitSubscription>(feed: H264Feed, units: Units, onStop: @escaping @Sendable () -> Void = {}) {
        self.init(units, isClosed: { feed.isClosed }, onStop: onStop) { unit in
            switch feed.push(unit.bytes, time: unit.time, keyframe: unit.keyframe) {
            case .sent: return true
            case .keyframeWanted: units.requestKeyframe(); return true
            case .closed: return false
            }
        }
    }

    /// Pictures each whole alone: nothing to ask of an encoder.
    public convenience init<Pictures: Subscription<EncodedUnit>>(feed: H264Feed, pictures: Pictures,
                                                                  onStop: @escaping @Sendable () -> Void = {}) {
        self.init(pictures, isClosed: { feed.isClosed }, onStop: onStop) { unit in
            feed.push(unit.bytes, time: unit.time, keyframe: unit.keyframe) != .closed
        }
    }

    /// A camera's sound: each packet's bytes and its capture time (`packet`), into its appsrc.
    public convenience init<Sound: Subscription>(feed: AudioFeed, sound: Sound,
                                                 packet: @escaping @Sendable (Sound.Item) -> (bytes: [UInt8], time: Double),
                                                 onStop: @escaping @Sendable () -> Void = {}) {
        self.init(sound, isClosed: { feed.isClosed }, onStop: onStop) { item in
            let p = packet(item)
            return feed.push(p.bytes, time: p.time)
        }
    }

    public func start() {
        let a = Alarm { [weak self] in self?.checkClosed() }
        alarm.withLock { $0 = a }
        attach { [weak self] in self?.drain() }
        drain()  // a new client is woken only once it has taken the init segment: take it now
        checkClosed()
    }

    /// A pipeline that went away while no unit was pushed (a camera stopped) is noticed here,
    /// each second: a push would have said so.
    private func checkClosed() {
        if isClosed() { return stop() }
        alarm.withLock { $0?.set(after: 1, leeway: 0.1) }
    }

    private func drain() {
        guard pump.withLock({ p -> Bool in
            guard !p.stopped else { return false }
            if p.draining { p.again = true; return false }
            p.draining = true
            return true
        }) else { return }
        var closed = false
        while true {
            if !closed { closed = pushAll() }
            // Done, unless a wake came meanwhile; a stop that came meanwhile is ours to finish.
            let (more, stopping) = pump.withLock { p -> (Bool, Bool) in
                if p.again && !p.stopped && !closed { p.again = false; return (true, false) }
                p.draining = false
                return (false, p.stopped)
            }
            if more { continue }
            if stopping { cancel() }
            break
        }
        if closed { stop() }
    }

    /// Leaves the stream and stops checking; once. A drain under way on another thread
    /// cancels the subscription as it ends (it may push the unit it holds).
    public func stop() {
        guard let cancelNow = pump.withLock({ p -> Bool? in
            guard !p.stopped else { return nil }
            p.stopped = true
            return !p.draining
        }) else { return }
        if cancelNow { cancel() }
        alarm.withLock { $0?.cancel(); $0 = nil }
        onStop()
    }
}
