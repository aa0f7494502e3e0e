// A whole file or none: the bytes go to a temporary name in the same directory, are made
// durable (fsync), renamed over the final name, and the directory is made durable so the
// rename survives a power cut. Photos, movie records, the accounts file and the saved state
// are written this way; a crash leaves at most the temporary file, which its owner removes
// at start-up.

#if canImport(Glibc)
import Glibc
#endif

public enum AtomicFile {
    /// Writes `bytes` to `path` through `temporary` (default: `path` + ".tmp-PID"), with
    /// `mode` (default: the mode `path` has now, else 0600). With `keepingPrevious`, the file
    /// `path` was becomes that one too once the new bytes are durable, before they take its
    /// name: a second name (a hard link, put in place by a rename) so that `path` is there, old
    /// or new, at every moment a crash could come; on a file system without hard links (FAT)
    /// it is renamed, and a crash between the two renames leaves the previous copy and no
    /// `path`. Throws the failed call's error; the temporary files never outlive a failure.
    public static func write(_ bytes: UnsafeRawBufferPointer, to path: String, temporary: String? = nil,
                             mode: mode_t? = nil, keepingPrevious previous: String? = nil) throws(SystemError) {
        let temp = temporary ?? path + ".tmp-\(getpid())"
        let mode = mode ?? ((try? Sys.stat(path)).map { $0.st_mode & 0o7777 } ?? 0o600)
        let fd = try Sys.open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: mode)
        var failure: SystemError?
        do throws(SystemError) {
            try Sys.writeAll(fd, bytes, temp)
            try Sys.fsync(fd, temp)
        } catch { failure = error }
        try? Sys.close(fd, temp)  // after a good fsync the bytes are on disk whatever close answers
        if failure == nil, let previous {
            failure = keep(path, as: previous)
        }
        if failure == nil {
            do throws(SystemError) { try Sys.rename(temp, to: path) } catch { failure = error }
        }
        if let failure {
            try? Sys.unlink(temp)
            throw failure
        }
        syncDirectory(of: path)
    }

    public static func write(_ bytes: [UInt8], to path: String, temporary: String? = nil, mode: mode_t? = nil,
                             keepingPrevious previous: String? = nil) throws(SystemError) {
        let done = bytes.withUnsafeBytes { b in
            Result { () throws(SystemError) in try write(b, to: path, temporary: temporary, mode: mode, keepingPrevious: previous) }
        }
        try done.get()
    }

    /// `path` also (or, without hard links, instead) as `previous`; nil when done or when there
    /// is no `path` yet.
    private static func keep(_ path: String, as previous: String) -> SystemError? {
        let link = previous + ".tmp-\(getpid())"
        try? Sys.unlink(link)  // one a crash left
        do throws(SystemError) {
            try Sys.link(path, as: link)
        } catch {
            if error.errno == ENOENT { return nil }
            // No second name here (FAT's EPERM, a FUSE file system's ENOSYS…): renamed instead.
            do throws(SystemError) { try Sys.rename(path, to: previous) } catch { return error.errno == ENOENT ? nil : error }
            return nil
        }
        do throws(SystemError) { try Sys.rename(link, to: previous) } catch {
            try? Sys.unlink(link)
            return error
        }
        return nil
    }

    /// Makes a rename or a new name in `path`'s directory durable (best effort: a directory
    /// that cannot be opened read-only is left to the file system's own ordering).
    public static func syncDirectory(of path: String) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        guard let dfd = try? Sys.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) else { return }
        try? Sys.fsync(dfd, directory)
        try? Sys.close(dfd, directory)
    }
}
