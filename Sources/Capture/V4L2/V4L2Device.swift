// One open V4L2 capture node. It owns the file descriptor and the mmap'd buffers, and
// `close()` undoes `open` in reverse (stream off, unmap, free buffers, close). Used by one
// thread at a time: the session configures it, then the capture thread reads frames.

import CV4L2
import Foundation
import CameraCore
import Glibc
import SystemSupport

public final class V4L2Device {
    public let path: String
    private(set) var fd: Int32
    private var buffers: [(start: UnsafeMutableRawPointer, length: Int)] = []
    /// Buffers lent past the frame callback (FrameLease), and those given back, to requeue.
    private let lent = LentBuffers()
    private(set) var streaming = false
    public private(set) var bytesPerLine = 0
    private(set) var sizeImage = 0

    public init(path: String) throws(CameraError) {
        self.path = path
        fd = try V4L2Call.system { () throws(SystemError) in try Sys.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC) }
    }

    deinit { close() }

    // MARK: - Identity

    func capability() throws(CameraError) -> v4l2_capability {
        var cap = v4l2_capability()
        try V4L2Call.ioctl(fd, CV4L2_VIDIOC_QUERYCAP, "VIDIOC_QUERYCAP", &cap)
        return cap
    }

    /// Capabilities of this node (not of the whole device).
    static func nodeCaps(_ cap: v4l2_capability) -> UInt32 {
        cap.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0 ? cap.device_caps : cap.capabilities
    }

    // MARK: - Format

    /// Sets the format; the driver may adjust it, so the applied one is returned.
    public func setFormat(_ want: VideoFormat) throws(CameraError) -> VideoFormat {
        var f = v4l2_format()
        f.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        f.fmt.pix.width = UInt32(want.width)
        f.fmt.pix.height = UInt32(want.height)
        f.fmt.pix.pixelformat = V4L2Call.fourcc(want.pixelFormat)
        f.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        try V4L2Call.ioctl(fd, CV4L2_VIDIOC_S_FMT, "VIDIOC_S_FMT", &f)
        guard let pf = V4L2Call.pixelFormat(f.fmt.pix.pixelformat) else {
            throw .unsupportedFormat("\(path) answered an unknown pixel format")
        }
        bytesPerLine = Int(f.fmt.pix.bytesperline)
        sizeImage = Int(f.fmt.pix.sizeimage)
        var applied = VideoFormat(pixelFormat: pf, width: Int(f.fmt.pix.width), height: Int(f.fmt.pix.height), fps: want.fps)
        applied.fps = (try? setFrameRate(want.fps)) ?? want.fps
        return applied
    }

    /// VIDIOC_S_PARM with 1/fps; returns the rate the driver chose.
    func setFrameRate(_ fps: Int) throws(CameraError) -> Int {
        var p = v4l2_streamparm()
        p.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        p.parm.capture.timeperframe = v4l2_fract(numerator: 1, denominator: UInt32(max(fps, 1)))
        try V4L2Call.ioctl(fd, CV4L2_VIDIOC_S_PARM, "VIDIOC_S_PARM", &p)
        let t = p.parm.capture.timeperframe
        return t.numerator == 0 ? fps : Int((Double(t.denominator) / Double(t.numerator)).rounded())
    }

    // MARK: - Streaming

    public func startStreaming(bufferCount: Int) throws(CameraError) {
        var req = v4l2_requestbuffers()
        req.count = UInt32(bufferCount)
        req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        req.memory = V4L2_MEMORY_MMAP.rawValue
        try V4L2Call.ioctl(fd, CV4L2_VIDIOC_REQBUFS, "VIDIOC_REQBUFS", &req)
        guard req.count >= 2 else { throw .unavailable("\(path): only \(req.count) buffer(s)") }
        do throws(CameraError) {
            for i in 0..<Int(req.count) {
                var buf = Self.buffer(index: i)
                try V4L2Call.ioctl(fd, CV4L2_VIDIOC_QUERYBUF, "VIDIOC_QUERYBUF", &buf)
                let p = try V4L2Call.system { () throws(SystemError) in
                    try Sys.mmap(length: Int(buf.length), protection: PROT_READ | PROT_WRITE, flags: MAP_SHARED, fd: fd,
                                 offset: Int64(buf.m.offset), path)
                }
                buffers.append((p, Int(buf.length)))
            }
            for i in 0..<buffers.count {
                var buf = Self.buffer(index: i)
                try V4L2Call.ioctl(fd, CV4L2_VIDIOC_QBUF, "VIDIOC_QBUF", &buf)
            }
            var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
            try V4L2Call.ioctl(fd, CV4L2_VIDIOC_STREAMON, "VIDIOC_STREAMON", &type)
            streaming = true
        } catch {
            releaseBuffers()
            throw error
        }
    }

    func stopStreaming() {
        if streaming {
            var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
            try? V4L2Call.ioctl(fd, CV4L2_VIDIOC_STREAMOFF, "VIDIOC_STREAMOFF", &type)
            streaming = false
        }
        // A lent buffer is still being read (an encode in hand): unmapping it under the reader
        // would crash it. The outputs give theirs back when they are detached, before a stop;
        // a camera lost on its own closes while they may still hold some, so wait for them,
        // and should one never come back, leave the mappings rather than pull them away.
        if !lent.waitUntilAllReturned(timeout: 5) { buffers.removeAll() }
        releaseBuffers()
    }

    private func releaseBuffers() {
        for b in buffers { try? Sys.munmap(b.start, length: b.length) }
        buffers.removeAll()
        var req = v4l2_requestbuffers()
        req.count = 0
        req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        req.memory = V4L2_MEMORY_MMAP.rawValue
        try? V4L2Call.ioctl(fd, CV4L2_VIDIOC_REQBUFS, "VIDIOC_REQBUFS", &req)
    }

    /// Waits up to `timeoutMs` for a filled buffer and lends its bytes to `body` with a lease:
    /// the buffer goes back to the driver once the lease's last holder lets go (at once when
    /// `body` kept none; else when an encode worker is done with it, requeued here, on this
    /// thread, at the next call). Returns false on timeout.
    public func withNextFrame(timeoutMs: Int32,
                       _ body: (UnsafeRawBufferPointer, _ sequence: UInt64, _ timestamp: Double, _ lease: FrameLease?) -> Void) throws(CameraError) -> Bool {
        try requeueReturned()
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        // An interrupted poll answers 0, as a timeout: the capture loop calls again.
        let n = try V4L2Call.system { () throws(SystemError) in try Sys.poll(&p, timeout: timeoutMs, path) }
        if n == 0 { return false }
        if p.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 && p.revents & Int16(POLLIN) == 0 {
            throw .system(call: "poll \(path)", errno: ENODEV)
        }
        var buf = Self.buffer(index: 0)
        do throws(CameraError) {
            try V4L2Call.ioctl(fd, CV4L2_VIDIOC_DQBUF, "VIDIOC_DQBUF", &buf)
        } catch {
            if case .system(let e) = error, e.errno == EAGAIN { return false }
            throw error
        }
        let index = Int(buf.index)
        let b = buffers[index]
        let used = min(Int(buf.bytesused), b.length)
        let corrupted = buf.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0
        if corrupted {
            try V4L2Call.ioctl(fd, CV4L2_VIDIOC_QBUF, "VIDIOC_QBUF", &buf)
            return true
        }
        do {
            let lease = lent.lend(index)
            body(UnsafeRawBufferPointer(start: b.start, count: used), UInt64(buf.sequence), Self.wallClock(buf.timestamp), lease)
        }  // the lease is dropped here: unless an output kept it, the buffer is back already
        try requeueReturned()
        return true
    }

    /// QBUF for every lent buffer given back since the last call.
    private func requeueReturned() throws(CameraError) {
        for index in lent.takeReturned() {
            var buf = Self.buffer(index: index)
            try V4L2Call.ioctl(fd, CV4L2_VIDIOC_QBUF, "VIDIOC_QBUF", &buf)
        }
    }

    /// How many buffers to ask for when `held` of them may be lent at once: three more stay
    /// with the driver (one filling, one ready, one spare), so capture never waits for an encode.
    public static func bufferCount(lending held: Int) -> Int { min(32, max(4, held + 3)) }

    /// Undoes `init` and `startStreaming` in reverse. Idempotent.
    public func close() {
        guard fd >= 0 else { return }
        stopStreaming()
        try? Sys.close(fd, path)  // released whatever it answers; nothing was written
        fd = -1
    }

    private static func buffer(index: Int) -> v4l2_buffer {
        var buf = v4l2_buffer()
        buf.index = UInt32(index)
        buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        buf.memory = V4L2_MEMORY_MMAP.rawValue
        return buf
    }

    /// Buffer timestamps are CLOCK_MONOTONIC; viewers want wall-clock time.
    private static func wallClock(_ tv: timeval) -> Double {
        let mono = Double(tv.tv_sec) + Double(tv.tv_usec) / 1e6
        guard mono > 0 else { return Clock.now() }
        return Clock.now() - (Clock.monotonic() - mono)
    }
}
