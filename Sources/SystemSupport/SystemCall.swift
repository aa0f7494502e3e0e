// The one way the project makes a system call, in the style of swift-system's valueOrErrno
// and swift-nio's syscall funnel: make the call, make it again when a signal interrupted it
// (where that is right for the call), read errno once, straight after the failure, and throw
// it as a SystemError naming the call and what it was called on ("open /var/lib/x.mp4").
// Every libc call of the Swift modules that reports failure through errno has a thin wrapper
// here; V4L2's ioctl (Capture's V4L2Call, through a C shim this module cannot import) goes
// through the same funnel, and so do the calls Swift's Glibc does not import (fallocate, a
// GNU extension: CSystemCalls, a C target this module alone imports). A library's own
// failures (FFmpeg, libmicrohttpd, libmosquitto) are that library's to report.
//
// Whole files and directory listings (where Foundation's FileManager answered nil) are in
// Files.swift. Not here: calls that cannot fail with the arguments the project gives them
// (clock_gettime on a standard clock, getpid), pthread mutexes (they answer an error number,
// not errno), and the bench tool's (ViewfinderBench) Foundation file calls.

import CSystemCalls
#if canImport(Glibc)
import Glibc
#endif

public enum Sys {
    // MARK: - The funnel

    /// Runs `body` until it answers something `failed` does not call a failure, or a
    /// failure other than an interruption. errno is read once, straight after the failure.
    /// `retryingEINTR` is false where making the call again would be wrong: close(2) on Linux
    /// has released the descriptor even when it answers EINTR, so a second close could close
    /// one another thread just opened.
    ///
    /// `package`, not private: Capture's V4L2 ioctl (a C shim SystemSupport cannot import)
    /// comes through here too. Everything else uses the wrappers below.
    @inline(__always)
    package static func valueOrErrno<T>(_ call: @autoclosure () -> String, retryingEINTR: Bool = true,
                                        failed: (T) -> Bool, _ body: () -> T) throws(SystemError) -> T {
        while true {
            let result = body()
            guard failed(result) else { return result }
            let e = Glibc.errno
            if e == EINTR && retryingEINTR { continue }
            throw SystemError(call: call(), errno: e)
        }
    }

    /// The funnel for the calls that answer -1 on failure (nearly all of them).
    @inline(__always)
    package static func valueOrErrno<T: FixedWidthInteger & SignedInteger>(
        _ call: @autoclosure () -> String, retryingEINTR: Bool = true, _ body: () -> T
    ) throws(SystemError) -> T {
        try valueOrErrno(call(), retryingEINTR: retryingEINTR, failed: { $0 == -1 }, body)
    }

    /// "write /path", or "write fd 7" when the caller has no better name for the descriptor.
    private static func named(_ call: String, _ what: String, fd: Int32) -> String {
        what.isEmpty ? "\(call) fd \(fd)" : "\(call) \(what)"
    }

    // MARK: - Descriptors

    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(SystemError) -> Int32 {
        try valueOrErrno("open \(path)") { Glibc.open(path, flags, mode) }
    }

    /// Closes `fd`; whatever the answer, `fd` is released and must not be closed again. Never
    /// retried (see the funnel). A failure says only that writes may not have reached the
    /// file (NFS, a full disk on a file system that writes at close).
    public static func close(_ fd: Int32, _ what: @autoclosure () -> String = "") throws(SystemError) {
        _ = try valueOrErrno(named("close", what(), fd: fd), retryingEINTR: false) { Glibc.close(fd) }
    }

    /// One read(2): the count read, 0 at the end of the file.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer,
                            _ what: @autoclosure () -> String = "") throws(SystemError) -> Int {
        try valueOrErrno(named("read", what(), fd: fd)) { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    public static func pread(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64,
                             _ what: @autoclosure () -> String = "") throws(SystemError) -> Int {
        try valueOrErrno(named("pread", what(), fd: fd)) { Glibc.pread(fd, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// One write(2): the count written, which may be fewer than asked (a pipe, a signal, a
    /// nearly full disk). `writeAll` writes them all.
    public static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer,
                             _ what: @autoclosure () -> String = "") throws(SystemError) -> Int {
        try valueOrErrno(named("write", what(), fd: fd)) { Glibc.write(fd, bytes.baseAddress, bytes.count) }
    }

    /// Writes every byte, looping over partial writes (a blocking descriptor: on a
    /// non-blocking one EAGAIN is thrown with what was written lost to the caller).
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer,
                                _ what: @autoclosure () -> String = "") throws(SystemError) {
        var off = 0
        while off < bytes.count {
            off += try write(fd, UnsafeRawBufferPointer(rebasing: bytes[off...]), what())
        }
    }

    public static func writeAll(_ fd: Int32, _ bytes: [UInt8], _ what: @autoclosure () -> String = "") throws(SystemError) {
        try bytes.withUnsafeBufferPointer { b throws(SystemError) in try writeAll(fd, UnsafeRawBufferPointer(b), what()) }
    }

    public static func fsync(_ fd: Int32, _ what: @autoclosure () -> String = "") throws(SystemError) {
        _ = try valueOrErrno(named("fsync", what(), fd: fd)) { Glibc.fsync(fd) }
    }

    /// Makes the data durable, not metadata such as mtime.
    public static func fdatasync(_ fd: Int32, _ what: @autoclosure () -> String = "") throws(SystemError) {
        _ = try valueOrErrno(named("fdatasync", what(), fd: fd)) { Glibc.fdatasync(fd) }
    }

    public static func fstat(_ fd: Int32, _ what: @autoclosure () -> String = "") throws(SystemError) -> Glibc.stat {
        var st = Glibc.stat()
        _ = try valueOrErrno(named("fstat", what(), fd: fd)) { Glibc.fstat(fd, &st) }
        return st
    }

    /// What fallocate(2) is asked to do to a range, the file's size unchanged either way.
    public enum Allocation: Sendable {
        /// Give it disk blocks now (FALLOC_FL_KEEP_SIZE): a later write there cannot find the disk full.
        case reserve
        /// Give its blocks back (FALLOC_FL_PUNCH_HOLE).
        case release
    }

    public static func fallocate(_ fd: Int32, _ allocation: Allocation, offset: Int64, length: Int64,
                                 _ what: @autoclosure () -> String = "") throws(SystemError) {
        let mode: Int32 = switch allocation {
        case .reserve: Int32(VF_FALLOC_KEEP_SIZE)
        case .release: Int32(VF_FALLOC_KEEP_SIZE | VF_FALLOC_PUNCH_HOLE)
        }
        _ = try valueOrErrno(named("fallocate", what(), fd: fd)) { vf_fallocate(fd, mode, offset, length) }
    }

    public static func ftruncate(_ fd: Int32, to length: Int64, _ what: @autoclosure () -> String = "") throws(SystemError) {
        _ = try valueOrErrno(named("ftruncate", what(), fd: fd)) { Glibc.ftruncate(fd, off_t(length)) }
    }

    public static func fcntl(_ fd: Int32, _ command: Int32, _ value: Int32,
                             _ what: @autoclosure () -> String = "") throws(SystemError) -> Int32 {
        try valueOrErrno(named("fcntl", what(), fd: fd)) { Glibc.fcntl(fd, command, value) }
    }

    /// A pipe's two ends, blocking, without close-on-exec (set them with `fcntl`).
    public static func pipe() throws(SystemError) -> (read: Int32, write: Int32) {
        var fds: (Int32, Int32) = (-1, -1)
        _ = try withUnsafeMutableBytes(of: &fds) { raw throws(SystemError) in
            let p = raw.baseAddress!.assumingMemoryBound(to: Int32.self)
            return try valueOrErrno("pipe") { Glibc.pipe(p) }
        }
        return fds
    }

    // MARK: - Memory

    public static func mmap(length: Int, protection: Int32, flags: Int32, fd: Int32, offset: Int64,
                            _ what: @autoclosure () -> String = "") throws(SystemError) -> UnsafeMutableRawPointer {
        let p = try valueOrErrno(named("mmap", what(), fd: fd), failed: { $0 == MAP_FAILED }) {
            Glibc.mmap(nil, length, protection, flags, fd, off_t(offset))
        }
        // Only a fixed mapping at address 0 answers nil, and none is asked for.
        guard let p else { throw SystemError(call: named("mmap", what(), fd: fd), errno: ENOMEM) }
        return p
    }

    public static func munmap(_ start: UnsafeMutableRawPointer, length: Int) throws(SystemError) {
        _ = try valueOrErrno("munmap \(start) \(length)") { Glibc.munmap(start, length) }
    }

    // MARK: - Waiting

    /// Waits up to `timeout` ms for an event on `fds`; the count of descriptors with one, 0
    /// on timeout. An interruption is not retried — the timeout would start again from the
    /// top — but answered as a timeout: 0, and the caller, which loops against its own
    /// deadline, polls again.
    public static func poll(_ fds: UnsafeMutableBufferPointer<pollfd>, timeout: Int32,
                            _ what: @autoclosure () -> String = "") throws(SystemError) -> Int {
        do throws(SystemError) {
            return Int(try valueOrErrno("poll \(what())", retryingEINTR: false) {
                Glibc.poll(fds.baseAddress, nfds_t(fds.count), timeout)
            })
        } catch where error.errno == EINTR {
            return 0
        }
    }

    public static func poll(_ fds: inout [pollfd], timeout: Int32, _ what: @autoclosure () -> String = "") throws(SystemError) -> Int {
        try fds.withUnsafeMutableBufferPointer { b throws(SystemError) in try poll(b, timeout: timeout, what()) }
    }

    public static func poll(_ fd: inout pollfd, timeout: Int32, _ what: @autoclosure () -> String = "") throws(SystemError) -> Int {
        try withUnsafeMutablePointer(to: &fd) { p throws(SystemError) in
            try poll(UnsafeMutableBufferPointer(start: p, count: 1), timeout: timeout, what())
        }
    }

    // MARK: - Paths

    /// Replaces `to` atomically when it exists.
    public static func rename(_ from: String, to: String) throws(SystemError) {
        _ = try valueOrErrno("rename \(from) to \(to)") { Glibc.rename(from, to) }
    }

    /// Whether process `pid` is there (kill with no signal: EPERM is another user's, there too).
    public static func processExists(_ pid: pid_t) -> Bool {
        do throws(SystemError) { _ = try valueOrErrno("kill \(pid) 0") { Glibc.kill(pid, 0) } } catch { return error.errno == EPERM }
        return true
    }

    /// A second name for a file (a hard link; EPERM where the file system has none, FAT's).
    public static func link(_ existing: String, as new: String) throws(SystemError) {
        _ = try valueOrErrno("link \(existing) to \(new)") { Glibc.link(existing, new) }
    }

    public static func unlink(_ path: String) throws(SystemError) {
        _ = try valueOrErrno("unlink \(path)") { Glibc.unlink(path) }
    }

    public static func mkdir(_ path: String, mode: mode_t) throws(SystemError) {
        _ = try valueOrErrno("mkdir \(path)") { Glibc.mkdir(path, mode) }
    }

    public static func stat(_ path: String) throws(SystemError) -> Glibc.stat {
        var st = Glibc.stat()
        _ = try valueOrErrno("stat \(path)") { systemStat(path, &st) }
        return st
    }

    public static func statvfs(_ path: String) throws(SystemError) -> Glibc.statvfs {
        var s = Glibc.statvfs()
        _ = try valueOrErrno("statvfs \(path)") { systemStatvfs(path, &s) }
        return s
    }

    public static func access(_ path: String, _ mode: Int32) throws(SystemError) {
        _ = try valueOrErrno("access \(path)") { Glibc.access(path, mode) }
    }

    /// Whether `path` names something this process can see (access F_OK).
    public static func exists(_ path: String) -> Bool { (try? access(path, F_OK)) != nil }

    /// The absolute path with every symbolic link, `.` and `..` resolved.
    public static func realpath(_ path: String) throws(SystemError) -> String {
        let p = try valueOrErrno("realpath \(path)", failed: { $0 == nil }) { Glibc.realpath(path, nil) }
        defer { free(p) }
        return String(cString: p!)
    }

    // MARK: - Sockets

    public static func socket(_ domain: Int32, _ type: Int32, _ proto: Int32 = 0,
                              _ what: @autoclosure () -> String) throws(SystemError) -> Int32 {
        try valueOrErrno("socket \(what())") { Glibc.socket(domain, type, proto) }
    }

    public static func sendto(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, flags: Int32,
                              to address: UnsafePointer<sockaddr>, length: socklen_t,
                              _ what: @autoclosure () -> String = "") throws(SystemError) -> Int {
        try valueOrErrno(named("sendto", what(), fd: fd)) { Glibc.sendto(fd, bytes.baseAddress, bytes.count, flags, address, length) }
    }

    // MARK: - The process

    public static func getrlimit(_ resource: Int32, _ what: @autoclosure () -> String) throws(SystemError) -> rlimit {
        var limit = rlimit()
        _ = try valueOrErrno("getrlimit \(what())") { Glibc.getrlimit(resource, &limit) }
        return limit
    }

    public static func setrlimit(_ resource: Int32, _ limit: rlimit, _ what: @autoclosure () -> String) throws(SystemError) {
        var limit = limit
        _ = try valueOrErrno("setrlimit \(what())") { Glibc.setrlimit(resource, &limit) }
    }

    /// Sets `signal`'s disposition to ignore (what signal(sig, SIG_IGN) does, through sigaction).
    public static func ignore(signal: Int32, _ what: @autoclosure () -> String) throws(SystemError) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = SIG_IGN
        sigemptyset(&action.sa_mask)
        _ = try valueOrErrno("sigaction \(what())") { sigaction(signal, &action, nil) }
    }

    public static func tcgetattr(_ fd: Int32) throws(SystemError) -> termios {
        var t = termios()
        _ = try valueOrErrno("tcgetattr fd \(fd)") { Glibc.tcgetattr(fd, &t) }
        return t
    }

    public static func tcsetattr(_ fd: Int32, _ action: Int32, _ t: termios) throws(SystemError) {
        var t = t
        _ = try valueOrErrno("tcsetattr fd \(fd)") { Glibc.tcsetattr(fd, action, &t) }
    }
}

// Glibc's stat and statvfs are a struct and a function of one name; inside `Sys`, whose
// wrappers take those names too, only the struct can be reached.
private func systemStat(_ path: String, _ st: inout stat) -> Int32 { stat(path, &st) }
private func systemStatvfs(_ path: String, _ s: inout statvfs) -> Int32 { statvfs(path, &s) }
