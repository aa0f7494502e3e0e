// The MP4 muxer's output: an append-only file descriptor behind a custom AVIOContext, so
// the writer decides when bytes become durable (fdatasync after each fragment) and a
// failed write keeps its errno (ENOSPC, EFBIG) instead of a bare AVERROR.

import CFFmpeg
import CameraCore
import Glibc
import SystemSupport

final class FileSink: MuxerSink {
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
}
