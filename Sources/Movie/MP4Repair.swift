// A movie cut off mid-write (SIGKILL, power loss, a full disk) ends in a partial fragment.
// Its top-level boxes are walked — ftyp, moov, then moof + mdat pairs — and the file is cut
// back to the end of the last whole pair, which every demuxer reads to the end.

import CameraCore
import Glibc
import SystemSupport

enum MP4Repair {
    /// Where the whole part of a fragmented MP4 ends (0 when even its header is incomplete),
    /// and how many whole fragments it holds.
    static func wholeLength(fd: Int32, size: Int64) -> (length: Int64, fragments: Int) {
        var offset: Int64 = 0
        var lastGood: Int64 = 0
        var sawMoov = false
        var moofPending = false
        var fragments = 0
        var header = [UInt8](repeating: 0, count: 16)
        while offset + 8 <= size {
            // A read that fails ends the walk as a short one does: what was whole so far stays.
            let n = header.withUnsafeMutableBufferPointer { (try? Sys.pread(fd, into: UnsafeMutableRawBufferPointer($0), at: offset)) ?? -1 }
            guard n >= 8 else { break }
            var length = Int64(header[0]) << 24 | Int64(header[1]) << 16 | Int64(header[2]) << 8 | Int64(header[3])
            let type = String(decoding: header[4..<8], as: UTF8.self)
            if length == 1 {
                guard n >= 16 else { break }
                length = header[8..<16].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            }
            guard length >= 8, offset + length <= size else { break }  // 0 (to the end) or cut off
            offset += length
            switch type {
            case "moov": sawMoov = true; lastGood = offset
            case "moof": moofPending = true
            case "mdat" where moofPending: moofPending = false; fragments += 1; lastGood = offset
            case "ftyp", "free", "skip", "mfra", "sidx", "styp": if !moofPending { lastGood = offset }
            default: break
            }
        }
        return (sawMoov ? lastGood : 0, fragments)
    }

    /// Cuts `path` back to its whole part and makes that durable. Answers the fragments kept
    /// (0: nothing playable).
    static func repair(_ path: String) throws(MovieError) -> Int {
        try MovieError.systemCall { () throws(SystemError) -> Int in
            let fd = try Sys.open(path, O_RDWR | O_CLOEXEC)
            defer { try? Sys.close(fd, path) }  // changes nothing: the fsync came first, or a failure is on its way
            let size = Int64(try Sys.fstat(fd, path).st_size)
            let (length, fragments) = wholeLength(fd: fd, size: size)
            if length < size { try Sys.ftruncate(fd, to: length, path) }
            FileSink.releaseReservation(fd, end: length, path)  // what the writer had reserved ahead
            try Sys.fsync(fd, path)
            return fragments
        }
    }
}
