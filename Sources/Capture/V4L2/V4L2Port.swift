// The ioctl seam: one open V4L2 node as the camera uses it — each method one or a few
// ioctls. `V4L2Device` is the real one; tests put a stateful model of a webcam here (a
// C920 that refuses focus_absolute while autofocus is on and resets at STREAMON), so the
// camera's control and streaming logic runs unchanged against it.

import CameraCore

public protocol V4L2Port: ControlIO, Sendable {
    var path: String { get }
    /// Bytes per row of the first plane, as the driver set it (0 before a format).
    var bytesPerLine: Int { get }
    /// VIDIOC_S_FMT + VIDIOC_S_PARM; the driver may adjust, so the applied format is returned.
    func setFormat(_ want: VideoFormat) throws(CameraError) -> VideoFormat
    /// REQBUFS (`bufferCount` buffers asked for), QUERYBUF + mmap, QBUF, STREAMON.
    func startStreaming(bufferCount: Int) throws(CameraError)
    /// poll + DQBUF, lends the bytes to `body` with a lease, QBUF once the lease is let go
    /// (at once, or at a later call); false on timeout. A buffer the driver flagged
    /// V4L2_BUF_FLAG_ERROR is queued again without calling `body` (true: one was dequeued).
    func withNextFrame(timeoutMs: Int32,
                       _ body: (UnsafeRawBufferPointer, _ sequence: UInt64, _ timestamp: Double, _ lease: FrameLease?) -> Void) throws(CameraError) -> Bool
    /// Undoes everything in reverse. Idempotent.
    func close()
}

/// Opens a node by path: the real device, or a model of one in tests.
public typealias V4L2Opener = @Sendable (String) throws(CameraError) -> any V4L2Port

/// One owner at a time: the session configures it, then the capture thread alone reads
/// frames; the control handle is used under the camera's lock.
extension V4L2Device: @unchecked Sendable, V4L2Port {
    public func controls() -> [DeviceControl] { FileControlIO(fd: fd).controls() }
    public func get(_ id: UInt32) throws(CameraError) -> Int { try FileControlIO(fd: fd).get(id) }
    public func set(_ id: UInt32, _ value: Int) throws(CameraError) { try FileControlIO(fd: fd).set(id, value) }
}
