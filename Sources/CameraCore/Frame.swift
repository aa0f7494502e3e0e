// Frames as they leave the encoder: encoded once for every viewer. (Raw, from a camera: Sample.swift.)

import Foundation

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
