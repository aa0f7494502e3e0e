// The MP4 muxer's output: an append-only file descriptor behind a custom AVIOContext, so
// the writer decides when bytes become durable (fdatasync after each fragment) and a
// failed write keeps its errno (ENOSPC, EFBIG) instead of a bare AVERROR. Disk blocks are
// reserved ahead of what is written (fallocate, the size unchanged), so a full disk is met
// by a reservation, before the muxer is handed a packet, not in the middle of a fragment's
// write — which would lose the whole fragment, and with the first one (a movie with sound
// writes its moov there) the whole movie.

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
    /// Where the blocks reserved for the file end.
    private(set) var reserved: Int64 = 0
    /// False on a file system that cannot reserve (fallocate EOPNOTSUPP: old vfat, some FUSE):
    /// there a full disk is found by the write, as before.
    private var reserving = true

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

    /// Makes sure the next `bytes` after what is written have disk blocks, reserving up to
    /// `ahead` bytes past what is written when that much is free (one call a few fragments,
    /// not one a packet). Throws the reservation's failure (ENOSPC: the disk is full) with
    /// nothing written, so everything before it stays whole.
    func reserve(_ bytes: Int64, ahead: Int64) throws(MovieError) {
        let need = written + bytes
        guard reserving, need > reserved else { return }
        do throws(SystemError) {
            do throws(SystemError) {
                try allocate(to: max(need, written + ahead))
            } catch {
                guard error.errno == ENOSPC || error.errno == EDQUOT, written + ahead > need else { throw error }
                try allocate(to: need)  // not that much free: exactly what this packet needs
            }
        } catch {
            guard error.errno != EOPNOTSUPP && error.errno != ENOSYS else { reserving = false; return }
            throw .system(error)
        }
    }

    private func allocate(to end: Int64) throws(SystemError) {
        try Sys.fallocate(fd, .reserve, offset: reserved, length: end - reserved, path)
        reserved = end
    }

    /// Gives back the blocks reserved past `end`, the file's length (at the close, and after a
    /// crash at the repair). ext4 frees blocks past the end on a truncate to the same length
    /// (its punched hole stops at the end); tmpfs and btrfs on a punched hole. Best effort: a
    /// file system that does neither keeps them until the file is removed.
    static func releaseReservation(_ fd: Int32, end: Int64, _ path: String) {
        try? Sys.fallocate(fd, .release, offset: end, length: 1 << 36, path)
        try? Sys.ftruncate(fd, to: end, path)
    }

    /// Makes what was written durable (data, not metadata such as mtime).
    func sync() throws(MovieError) {
        try MovieError.systemCall { () throws(SystemError) in try Sys.fdatasync(fd, path) }
    }

    func close() throws(MovieError) {
        guard fd >= 0 else { return }
        if reserved > written { Self.releaseReservation(fd, end: written, path) }
        let fd = self.fd
        self.fd = -1  // released whatever close answers (see Sys.close)
        try MovieError.systemCall { () throws(SystemError) in try Sys.close(fd, path) }
    }
}
