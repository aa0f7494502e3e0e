// The syscall funnel (Sys) against the real kernel: a failure's errno and name, writeAll over
// short writes, rename over an existing file, and what an interrupting signal does to a
// blocked call. Interruptions are real: a no-op SIGUSR1 handler installed without
// SA_RESTART, sent with pthread_kill to a thread the test has seen asleep in the kernel
// (state S in /proc/PID/task/TID/stat), so the signal lands inside the call. Each of those
// tests first shows, with the plain libc call, that the setup does interrupt it (EINTR, or a
// short count), so a pass is not a signal that came too early.

import Foundation
import Synchronization
import SystemSupport
import Testing

@Suite(.serialized) struct SystemCallTests {
    // MARK: - Failures name the call

    @Test func openOfAMissingPathThrowsENOENTNamingThePath() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/missing.mp4"
        #expect(throws: SystemError(call: "open \(path)", errno: ENOENT)) {
            try Sys.open(path, O_RDONLY | O_CLOEXEC)
        }
        do throws(SystemError) {
            _ = try Sys.open(path, O_RDONLY | O_CLOEXEC)
            Issue.record("opened a missing file")
        } catch {
            #expect(error.call.contains(path) && error.errno == ENOENT)
            #expect(error.description.contains("No such file or directory"), "\(error)")
        }
    }

    // MARK: - Whole files and directories

    @Test func readFileReadsToTheEndWhateverTheSizeSays() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/big"
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }  // more than one read
        let fd = try Sys.open(path, O_WRONLY | O_CREAT | O_CLOEXEC, mode: 0o644)
        try Sys.writeAll(fd, bytes)
        try Sys.close(fd)
        #expect(try Sys.readFile(path) == bytes)
        // A procfs or sysfs file says size 0 (or 4096) whatever it holds.
        let status = try Sys.open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        defer { try? Sys.close(status) }
        #expect(try Sys.fstat(status).st_size == 0)
        #expect(try Sys.readText("/proc/self/status").contains("Pid:\t\(getpid())"))
        #expect(throws: SystemError(call: "open \(dir.path)/missing", errno: ENOENT)) { try Sys.readFile(dir.path + "/missing") }
        #expect(throws: SystemError(call: "read \(dir.path)", errno: EISDIR)) { try Sys.readFile(dir.path) }
    }

    @Test func directoryEntriesAreTheNamesWithoutDots() throws {
        let dir = try TemporaryDirectory()
        for name in ["a", "b.jpg", "ünïcode"] { try Sys.close(try Sys.open("\(dir.path)/\(name)", O_WRONLY | O_CREAT | O_CLOEXEC, mode: 0o644)) }
        try Sys.mkdir(dir.path + "/sub", mode: 0o755)
        #expect(try Set(Sys.directoryEntries(dir.path)) == ["a", "b.jpg", "ünïcode", "sub"])
        #expect(Sys.isDirectory(dir.path + "/sub") && !Sys.isDirectory(dir.path + "/a") && !Sys.isDirectory(dir.path + "/none"))
        #expect(throws: SystemError(call: "opendir \(dir.path)/none", errno: ENOENT)) { try Sys.directoryEntries(dir.path + "/none") }
        #expect(throws: SystemError(call: "opendir \(dir.path)/a", errno: ENOTDIR)) { try Sys.directoryEntries(dir.path + "/a") }
    }

    @Test func closeOfABadDescriptorNamesIt() {
        #expect(throws: SystemError(call: "close fd -1", errno: EBADF)) { try Sys.close(-1) }
    }

    // MARK: - Paths

    @Test func renameOverAnExistingFileReplacesIt() throws {
        let dir = try TemporaryDirectory()
        let from = dir.path + "/new", to = dir.path + "/old"
        try write("new bytes", to: from)
        try write("old bytes, longer", to: to)
        try Sys.rename(from, to: to)
        #expect(FileManager.default.contents(atPath: to) == Data("new bytes".utf8))
        #expect(!Sys.exists(from))
        #expect(throws: SystemError(call: "stat \(from)", errno: ENOENT)) { try Sys.stat(from) }
    }

    @Test func mkdirOfAnExistingDirectoryThrowsEEXIST() throws {
        let dir = try TemporaryDirectory()
        #expect(throws: SystemError(call: "mkdir \(dir.path)", errno: EEXIST)) { try Sys.mkdir(dir.path, mode: 0o755) }
    }

    // MARK: - Interruptions

    /// A blocking write into a full pipe takes what fits, blocks, and answers that short count
    /// when a signal arrives; writeAll then writes the rest, which a slow reader (small
    /// reads) takes a little at a time.
    @Test func writeAllWritesEverythingPastShortWritesToASlowReader() throws {
        try withNoOpHandler {
            let pipe = try Sys.pipe()
            defer {
                try? Sys.close(pipe.read)  // a writer still blocked then gets EPIPE (its thread blocks SIGPIPE)
                try? Sys.close(pipe.write)
            }
            let total = 1 << 20
            let bytes = (0..<total).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }

            // The plain call: interrupted with the pipe full, it answers a short count.
            let plain = Worker { () throws(SystemError) -> Int in
                bytes.withUnsafeBufferPointer { Glibc.write(pipe.write, $0.baseAddress, $0.count) }
            }
            try #require(plain.waitUntilBlocked(), "the plain write never blocked")
            plain.interrupt()
            let short = try #require(plain.join(), "the plain write did not return").get()
            #expect(short > 0 && short < total, "answered \(short) of \(total)")
            let drained = try drain(pipe.read, count: short) == Array(bytes.prefix(short))  // a Bool: a megabyte's diff would swamp the log
            #expect(drained, "the bytes written before the interruption differ")

            // writeAll: the same short write, then the rest, to a reader taking 1000 bytes at a time.
            let writer = Worker { () throws(SystemError) -> Void in try Sys.writeAll(pipe.write, bytes, "the test pipe") }
            try #require(writer.waitUntilBlocked(), "writeAll never blocked")
            let before = interruptions.load(ordering: .acquiring)
            writer.interrupt()
            #expect(eventually { interruptions.load(ordering: .acquiring) > before }, "the signal never arrived")
            var got: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 1000)
            while got.count < total {
                var ready = pollfd(fd: pipe.read, events: Int16(POLLIN), revents: 0)
                guard try Sys.poll(&ready, timeout: 10_000, "the test pipe") > 0 else { break }  // nothing for 10 s
                let n = try chunk.withUnsafeMutableBufferPointer { b throws(SystemError) in
                    try Sys.read(pipe.read, into: UnsafeMutableRawBufferPointer(b), "the test pipe")
                }
                got += chunk.prefix(n)
            }
            #expect(got.count == total, "read \(got.count) of \(total) bytes")
            let same = got == bytes
            #expect(same, "the bytes read differ from those written")
            let result = try #require(writer.join(), "writeAll did not return")
            #expect(throws: Never.self) { try result.get() }
        }
    }

    /// A read blocked on an empty pipe is interrupted (the plain call answers EINTR); through
    /// the funnel it is made again, blocks again, and returns the byte written afterwards.
    @Test func readInterruptedBySignalIsRetried() throws {
        try withNoOpHandler {
            let pipe = try Sys.pipe()
            defer {
                try? Sys.close(pipe.write)  // first: a reader still blocked sees the end of the file
                try? Sys.close(pipe.read)
            }

            let plain = Worker { () throws(SystemError) -> [Int32] in
                var byte: UInt8 = 0
                let n = Glibc.read(pipe.read, &byte, 1)
                return [Int32(n), n < 0 ? errno : 0]
            }
            try #require(plain.waitUntilBlocked(), "the plain read never blocked")
            plain.interrupt()
            #expect(try #require(plain.join(), "the plain read did not return").get() == [-1, EINTR])

            let funnel = Worker { () throws(SystemError) -> [UInt8] in
                var buffer = [UInt8](repeating: 0, count: 4)
                let n = try buffer.withUnsafeMutableBufferPointer { b throws(SystemError) in
                    try Sys.read(pipe.read, into: UnsafeMutableRawBufferPointer(b), "the test pipe")
                }
                return Array(buffer.prefix(n))
            }
            try #require(funnel.waitUntilBlocked(), "Sys.read never blocked")
            let before = interruptions.load(ordering: .acquiring)
            funnel.interrupt()
            #expect(eventually { interruptions.load(ordering: .acquiring) > before }, "the signal never arrived")
            #expect(funnel.waitUntilBlocked(), "not blocked in the read again")
            try Sys.writeAll(pipe.write, [42], "the test pipe")
            let result = try #require(funnel.join(), "Sys.read did not return")
            #expect(throws: Never.self) { try result.get() }
            #expect((try? result.get()) == [42])
        }
    }

    /// poll is not made again (its timeout would start over): an interruption answers 0 at
    /// once, as a timeout would, not an error and not after the minute asked for.
    @Test func pollInterruptedAnswersZeroAtOnce() throws {
        try withNoOpHandler {
            let pipe = try Sys.pipe()
            defer {
                try? Sys.close(pipe.write)
                try? Sys.close(pipe.read)
            }
            let waiter = Worker { () throws(SystemError) -> Int in
                var ready = pollfd(fd: pipe.read, events: Int16(POLLIN), revents: 0)
                return try Sys.poll(&ready, timeout: 60_000, "the test pipe")
            }
            try #require(waiter.waitUntilBlocked(), "poll never blocked")
            waiter.interrupt()
            let result = waiter.join()
            if result == nil { try Sys.writeAll(pipe.write, [1]) }  // let the minute-long poll go
            #expect(try #require(result, "poll was made again: still waiting").get() == 0)
        }
    }
}

// MARK: - Support

/// Counted by the no-op handler (an atomic add is async-signal-safe).
private let interruptions = Atomic<Int>(0)

private func countInterruption(_ signal: Int32) { interruptions.add(1, ordering: .releasing) }

/// Runs `body` with SIGUSR1 handled by a handler that does nothing, installed without
/// SA_RESTART: a call blocked when it arrives answers EINTR (or a short count) instead of
/// being restarted by the kernel. The disposition before is put back after.
private func withNoOpHandler(_ body: () throws -> Void) throws {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = countInterruption
    sigemptyset(&action.sa_mask)
    action.sa_flags = 0
    var old = sigaction()
    try #require(sigaction(SIGUSR1, &action, &old) == 0)
    defer { sigaction(SIGUSR1, &old, nil) }
    try body()
}

/// A thread of its own running one call, which the test can see blocked and interrupt. It
/// takes SIGUSR1 (a thread started from a Dispatch or Swift concurrency thread inherits a mask
/// that blocks it) and not SIGPIPE (a write left blocked when the test closes the read end
/// fails with EPIPE instead of ending the test process).
private final class Worker<T: Sendable>: @unchecked Sendable {  // `thread` and `task` are written before `init` returns
    private(set) var thread = pthread_t()
    /// /proc/PID/task/TID of the thread.
    private(set) var task = ""
    private let result = Locked<Result<T, SystemError>?>(nil)
    private let started = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () throws(SystemError) -> T) {
        Thread { [self] in
            var mask = sigset_t()
            sigemptyset(&mask)
            sigaddset(&mask, SIGUSR1)
            pthread_sigmask(SIG_UNBLOCK, &mask, nil)
            sigemptyset(&mask)
            sigaddset(&mask, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &mask, nil)
            thread = pthread_self()
            task = (try? Sys.realpath("/proc/thread-self")) ?? ""
            started.signal()
            let r = Result { () throws(SystemError) -> T in try body() }
            result.withLock { $0 = r }
            finished.signal()
        }.start()
        started.wait()
    }

    var isDone: Bool { result.withLock { $0 != nil } }

    /// True once the thread sleeps in the kernel, which after `init` is only in its call.
    func waitUntilBlocked(timeout: Double = 10) -> Bool {
        eventually(timeout: timeout) { self.isDone || self.state == "S" } && !isDone
    }

    func interrupt() { pthread_kill(thread, SIGUSR1) }

    /// The call's result; nil if it has not returned within `timeout` seconds.
    func join(timeout: Double = 10) -> Result<T, SystemError>? {
        guard finished.wait(timeout: .now() + timeout) == .success else { return nil }
        return result.withLock { $0 }
    }

    /// The state letter of /proc/PID/task/TID/stat (after the name, which may hold spaces).
    private var state: Character? {
        guard let stat = try? String(contentsOfFile: task + "/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].first { $0 != " " }
    }
}

/// Checks `condition` every millisecond until it holds or `timeout` seconds pass: a wait for
/// something observable, with a bound, not a sleep standing in for one.
private func eventually(timeout: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(1_000)
    }
    return condition()
}

/// Reads exactly `count` bytes that are already in the pipe.
private func drain(_ fd: Int32, count: Int) throws(SystemError) -> [UInt8] {
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while out.count < count {
        let want = min(chunk.count, count - out.count)
        let n = try chunk.withUnsafeMutableBufferPointer { b throws(SystemError) in
            try Sys.read(fd, into: UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: b[..<want])))
        }
        guard n > 0 else { break }
        out += chunk.prefix(n)
    }
    return out
}

private func write(_ text: String, to path: String) throws {
    let fd = try Sys.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o644)
    defer { try? Sys.close(fd, path) }
    try Sys.writeAll(fd, Array(text.utf8), path)
}

/// A fresh directory, removed with its contents when the value goes.
private final class TemporaryDirectory {
    let path = NSTemporaryDirectory() + "vf-sys-\(UUID().uuidString)"
    init() throws { try Sys.mkdir(path, mode: 0o700) }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}
