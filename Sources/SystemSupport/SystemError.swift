// One errno-carrying error for every system call, in swift-system's style: errno is read
// once, right after the call, and travels with the call's name.

#if canImport(Glibc)
import Glibc
#endif

public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The call that failed, with what it was called on (`open /dev/video0`, `VIDIOC_S_CTRL`).
    public var call: String
    public var errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// Reads errno now: call it straight after the failed call.
    public static func last(_ call: String) -> SystemError { SystemError(call: call, errno: Glibc.errno) }

    public var description: String { "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))" }
}
