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
    /// Set when the camera lends its buffer beyond the callback (a V4L2 mmap buffer): an
    /// output that keeps a reference may read `bytes` until it lets go; the buffer goes back
    /// to the driver when the last reference is released. Nil: copy to keep.
    public let lease: FrameLease?

    public init(format: VideoFormat, bytes: UnsafeRawBufferPointer, stride: Int,
                sequence: UInt64, timestamp: Double, lease: FrameLease? = nil) {
        self.format = format
        self.bytes = bytes
        self.stride = stride
        self.sequence = sequence
        self.timestamp = timestamp
        self.lease = lease
    }
}

/// A camera buffer lent past the frame callback (µStreamer lends the V4L2 buffer to its
/// encoder and requeues it after). The camera makes one per frame; whoever wants the bytes
/// later keeps a reference, and `returned` runs once, on the thread that drops the last one
/// (the capture thread's, after the callback, or an encode worker's, after the encode).
public final class FrameLease: Sendable {
    private let returned: @Sendable () -> Void

    public init(returned: @escaping @Sendable () -> Void) { self.returned = returned }

    deinit { returned() }
}

/// A JPEG ready for the wire, shared by every viewer (immutable, so safe to share). A preview
/// frame holds its finished multipart part: `bytes` go to every viewer's socket as they are,
/// and the JPEG is the part's `jpegRange`.
public final class EncodedFrame: Sendable {
    public let bytes: [UInt8]
    public let jpegRange: Swift.Range<Int>
    public let width: Int
    public let height: Int
    /// The session's frame counter, monotonic across camera switches.
    public let sequence: UInt64
    public let timestamp: Double
    /// False for the "NO SIGNAL" placeholder.
    public let online: Bool

    public convenience init(jpeg: [UInt8], width: Int, height: Int, sequence: UInt64,
                            timestamp: Double, online: Bool = true) {
        self.init(bytes: jpeg, jpegRange: jpeg.indices, width: width, height: height, sequence: sequence,
                  timestamp: timestamp, online: online)
    }

    public init(bytes: [UInt8], jpegRange: Swift.Range<Int>, width: Int, height: Int, sequence: UInt64,
                timestamp: Double, online: Bool = true) {
        self.bytes = bytes
        self.jpegRange = jpegRange
        self.width = width
        self.height = height
        self.sequence = sequence
        self.timestamp = timestamp
        self.online = online
    }

    /// The JPEG alone (a copy when the frame holds a whole part: snapshots and photos, not viewers).
    public var jpeg: [UInt8] { jpegRange == bytes.indices ? bytes : Array(bytes[jpegRange]) }

    public var jpegCount: Int { jpegRange.count }

    /// `SECONDS.MICROS`, the form mjpg-streamer and µStreamer put in X-Timestamp.
    public var timestampString: String { Self.format(timestamp) }

    public static func format(_ t: Double) -> String {
        let micros = Int64((t * 1_000_000).rounded())
        let s = micros / 1_000_000, us = micros % 1_000_000
        let frac = String(us)
        return "\(s)." + String(repeating: "0", count: 6 - frac.count) + frac
    }
}
