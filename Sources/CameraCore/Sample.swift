// What crosses from an input to its outputs, as CMSampleBuffer does in AVFoundation: a video
// frame or a buffer of audio, with its bytes, its format, and its capture time on the one
// clock every input stamps with (wall-clock seconds at exposure; a microphone's buffer at its
// first sample), so a beep and the frame exposed with it carry the same time. The media is
// the format's type: a hand-off, a lane and the outputs' plumbing are written once for both,
// and specialized for each — the video path pays nothing for sharing them.

import Foundation

/// A media's format: VideoFormat or AudioFormat.
public protocol SampleFormat: Sendable, Equatable {
    static var mediaType: MediaType { get }
}

/// A sample as an input delivers it. `bytes` is only valid for the duration of the callback
/// that receives it: the input reuses its buffers (as V4L2 mmap buffers are).
public struct Sample<Format: SampleFormat>: ~Copyable {
    public let format: Format
    public let bytes: UnsafeRawBufferPointer
    /// Video: bytes per row of the first plane. Audio: bytes per frame (one sample of every channel).
    public let stride: Int
    /// The input's own counter (V4L2 `sequence`; audio: frames captured before this buffer).
    public let sequence: UInt64
    /// The capture time: wall-clock seconds since 1970 at exposure (audio: at the first sample).
    public let timestamp: Double
    /// Set when the input lends its buffer beyond the callback (a V4L2 mmap buffer): an
    /// output that keeps a reference may read `bytes` until it lets go; the buffer goes back
    /// to the driver when the last reference is released. Nil: copy to keep.
    public let lease: FrameLease?
    /// Video: the part of the camera's whole picture the frame shows when the camera cropped
    /// it for the zoom itself (libcamera's ScalerCrop, see DeviceCrop.swift); nil: all of it.
    /// Audio: nil.
    public let crop: CropRegion?

    public init(format: Format, bytes: UnsafeRawBufferPointer, stride: Int,
                sequence: UInt64, timestamp: Double, lease: FrameLease? = nil, crop: CropRegion? = nil) {
        self.format = format
        self.bytes = bytes
        self.stride = stride
        self.sequence = sequence
        self.timestamp = timestamp
        self.lease = lease
        self.crop = crop
    }
}

/// A video frame as a camera delivers it.
public typealias RawFrame = Sample<VideoFormat>
/// A buffer of interleaved audio as a microphone delivers it.
public typealias AudioBuffer = Sample<AudioFormat>

extension VideoFormat: SampleFormat {
    public static var mediaType: MediaType { .video }
}

/// Interleaved PCM: what a microphone delivers.
public struct AudioFormat: SampleFormat, Codable {
    public enum Encoding: String, Sendable, Codable { case s16le, f32le }
    public var encoding: Encoding
    public var sampleRate: Int
    public var channels: Int

    public static var mediaType: MediaType { .audio }

    public init(encoding: Encoding, sampleRate: Int, channels: Int) {
        self.encoding = encoding
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// Bytes of one frame: a sample of every channel.
    public var bytesPerFrame: Int { channels * (encoding == .s16le ? 2 : 4) }
}

extension Sample where Format == AudioFormat {
    /// Frames (a sample of every channel) in the buffer.
    public var frames: Int { bytes.count / max(1, stride) }
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
