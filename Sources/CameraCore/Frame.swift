// Frames as they travel: raw from a camera, then encoded once for every viewer.

import Foundation

/// A frame as a camera delivers it. `bytes` is only valid for the duration of the
/// callback that receives it: the camera reuses its buffers (as V4L2 mmap buffers are).
public struct RawFrame: ~Copyable {
    public let format: VideoFormat
    public let bytes: UnsafeRawBufferPointer
    /// Bytes per row of the first plane.
    public let stride: Int
    /// The camera's own frame counter (V4L2 `sequence`).
    public let sequence: UInt64
    /// When the frame was exposed, as wall-clock seconds since 1970.
    public let timestamp: Double

    public init(format: VideoFormat, bytes: UnsafeRawBufferPointer, stride: Int,
                sequence: UInt64, timestamp: Double) {
        self.format = format
        self.bytes = bytes
        self.stride = stride
        self.sequence = sequence
        self.timestamp = timestamp
    }
}

/// A JPEG ready for the wire, shared by every viewer (immutable, so safe to share).
public final class EncodedFrame: Sendable {
    public let jpeg: [UInt8]
    public let width: Int
    public let height: Int
    /// The session's frame counter, monotonic across camera switches.
    public let sequence: UInt64
    public let timestamp: Double
    /// False for the "NO SIGNAL" placeholder.
    public let online: Bool

    public init(jpeg: [UInt8], width: Int, height: Int, sequence: UInt64,
                timestamp: Double, online: Bool = true) {
        self.jpeg = jpeg
        self.width = width
        self.height = height
        self.sequence = sequence
        self.timestamp = timestamp
        self.online = online
    }

    /// `SECONDS.MICROS`, the form mjpg-streamer and µStreamer put in X-Timestamp.
    public var timestampString: String { Self.format(timestamp) }

    public static func format(_ t: Double) -> String {
        let micros = Int64((t * 1_000_000).rounded())
        let s = micros / 1_000_000, us = micros % 1_000_000
        let frac = String(us)
        return "\(s)." + String(repeating: "0", count: 6 - frac.count) + frac
    }
}
