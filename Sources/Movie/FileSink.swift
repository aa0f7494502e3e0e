// The MP4 muxer's output: an append-only file descriptor behind a custom AVIOContext, so
// the writer decides when bytes become durable (fdatasync after each fragment) and a
// failed write keeps its errno (ENOSPC, EFBIG) instead of a bare AVERROR.

import CFFmpeg
import CameraCore
import Glibc
import SystemSupport

final class FileSink {
    let path: String
    private(set) var fd: Int32
    /// Bytes the file holds (everything the muxer handed over has been written).
    private(set) var written: Int64 = 0
    /// The first write that failed; the muxer only sees an AVERROR.
    private(set) var failure: SystemError?

    /// Creates `path`; it must not exist.
    init(creating path: String) throws(MovieError) {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .system(.last("open \(path)")) }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    func write(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
        if failure != nil { return cff_averror(failure!.errno) }
        var off = 0
        while off < count {
            let n = Glibc.write(fd, bytes + off, count - off)
            if n < 0 {
                if errno == EINTR { continue }
                failure = .last("write \(path)")
                return cff_averror(failure!.errno)
            }
            off += n
        }
        written += Int64(count)
        return Int32(count)
    }

    /// Makes what was written durable (data, not metadata such as mtime).
    func sync() throws(MovieError) {
        guard fdatasync(fd) == 0 else { throw .system(.last("fdatasync \(path)")) }
    }

    func close() throws(MovieError) {
        guard fd >= 0 else { return }
        let rc = Glibc.close(fd)
        fd = -1
        if rc != 0 { throw .system(.last("close \(path)")) }
    }

    /// The AVIOContext that writes here. Not seekable: the muxer appends only, which is
    /// what keeps a cut-off file readable up to its last fragment.
    func makeIOContext() throws(MovieError) -> UnsafeMutablePointer<AVIOContext> {
        let size: Int32 = 64 * 1024
        guard let buffer = av_malloc(Int(size))?.assumingMemoryBound(to: UInt8.self) else {
            throw .library(call: "av_malloc", code: cff_averror(ENOMEM))
        }
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        guard let io = avio_alloc_context(buffer, size, 1, opaque, nil, { opaque, buf, size in
            guard let opaque, let buf, size > 0 else { return 0 }
            return Unmanaged<FileSink>.fromOpaque(opaque).takeUnretainedValue().write(buf, Int(size))
        }, nil) else {
            av_free(buffer)
            throw .library(call: "avio_alloc_context", code: cff_averror(ENOMEM))
        }
        io.pointee.seekable = 0
        return io
    }
}
