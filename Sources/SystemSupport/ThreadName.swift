// Names the calling thread for the kernel (/proc/PID/task/*/comm, top, perf): Foundation's
// `Thread.name` stays inside Foundation on Linux, and glibc's pthread_setname_np is not in
// Swift's view of it. Writing the thread's own comm file is what that call does; the kernel
// keeps 15 bytes.

#if canImport(Glibc)
import Glibc
#endif

public enum ThreadName {
    private static let comm = "/proc/thread-self/comm"

    public static func set(_ name: String) {
        var bytes = Array(name.utf8.prefix(15))
        while !bytes.isEmpty, String(validating: bytes, as: UTF8.self) == nil { bytes.removeLast() }  // whole characters
        // No /proc, or a name the kernel refuses: the name is cosmetic.
        guard let fd = try? Sys.open(comm, O_WRONLY | O_CLOEXEC) else { return }
        // One write, even of nothing (an empty name is a name): the kernel takes a comm whole.
        _ = bytes.withUnsafeBufferPointer { try? Sys.write(fd, UnsafeRawBufferPointer($0), comm) }
        try? Sys.close(fd, comm)
    }

    /// The calling thread's name as the kernel has it.
    public static var current: String {
        guard let fd = try? Sys.open(comm, O_RDONLY | O_CLOEXEC) else { return "" }
        defer { try? Sys.close(fd, comm) }
        var bytes = [UInt8](repeating: 0, count: 16)
        let n = bytes.withUnsafeMutableBufferPointer { b in (try? Sys.read(fd, into: UnsafeMutableRawBufferPointer(b), comm)) ?? 0 }
        return String(decoding: bytes.prefix(n), as: UTF8.self).trimmingSuffix { $0 == "\n" }
    }

    /// Runs `body` with the calling thread named `name`, then names it back: the threads a
    /// library starts inside it (x264's, on an encoder's open) inherit that name, so a thread
    /// list shows them as the library's rather than as the caller's (a pool thread).
    public static func lending<T, E: Error>(_ name: String, _ body: () throws(E) -> T) throws(E) -> T {
        let before = current
        set(name)
        defer { set(before) }
        return try body()
    }
}

private extension String {
    func trimmingSuffix(while drop: (Character) -> Bool) -> String {
        var s = self
        while let last = s.last, drop(last) { s.removeLast() }
        return s
    }
}
