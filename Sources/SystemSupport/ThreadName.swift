// Names the calling thread for the kernel (/proc/PID/task/*/comm, top, perf): Foundation's
// `Thread.name` stays inside Foundation on Linux, and glibc's pthread_setname_np is not in
// Swift's view of it. Writing the thread's own comm file is what that call does; the kernel
// keeps 15 bytes.

#if canImport(Glibc)
import Glibc
#endif

public enum ThreadName {
    public static func set(_ name: String) {
        var bytes = Array(name.utf8.prefix(15))
        while !bytes.isEmpty, String(validating: bytes, as: UTF8.self) == nil { bytes.removeLast() }  // whole characters
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }  // no /proc: the name is cosmetic
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }
}
