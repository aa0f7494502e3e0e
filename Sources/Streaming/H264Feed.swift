// The appsrc a transport's pipeline reads: whoever holds an H264Feed pushes the camera's
// access units (Annex B, SPS and PPS before each IDR) into it until it closes.

import CGStreamerShim

public final class H264Feed: @unchecked Sendable {  // the C feed locks itself
    private let raw: OpaquePointer

    /// Takes over one reference to `raw`.
    init(_ raw: OpaquePointer) { self.raw = raw }

    deinit { vfg_feed_release(raw) }

    public enum Pushed: Sendable, Equatable {
        case sent
        /// The pipeline asked for a keyframe (a PLI from a browser, a new RTSP client).
        case keyframeWanted
        /// The pipeline is gone; push no more.
        case closed
    }

    /// `pts` in 90 kHz ticks of capture time (the encoder's).
    public func push(_ bytes: [UInt8], pts: Int64, keyframe: Bool) -> Pushed {
        let r = bytes.withUnsafeBufferPointer { vfg_feed_push(raw, $0.baseAddress, $0.count, pts, keyframe ? 1 : 0) }
        return r < 0 ? .closed : r == 1 ? .keyframeWanted : .sent
    }

    public var isClosed: Bool { vfg_feed_closed(raw) != 0 }
}
