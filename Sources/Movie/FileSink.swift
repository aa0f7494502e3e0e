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
        fd = try MovieError.systemCall { () throws(SystemError) in
            try Sys.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o644)
        }
    }

    deinit { if fd >= 0 { try? Sys.close(fd, path) } }

    func write(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
        if let failure { return cff_averror(failure.errno) }
        do throws(SystemError) {
            try Sys.writeAll(fd, UnsafeRawBufferPointer(start: bytes, count: count), path)
        } catch {
            failure = error
            return cff_averror(error.errno)
        }
        written += Int64(count)
        return Int32(count)
    }

    /// Makes what was written durable (data, not metadata such as mtime).
    func sync() throws(MovieError) {
        try MovieError.systemCall { () throws(SystemError) in try Sys.fdatasync(fd, path) }
    }

    func close() throws(MovieError) {
        guard fd >= 0 else { return }
        let fd = self.fd
        self.fd = -1  // released whatever close answers (see Sys.close)
        try MovieError.systemCall { () throws(SystemError) in try Sys.close(fd, path) }
    }
}
