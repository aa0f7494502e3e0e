// sd_notify(3) without libsystemd: one datagram of newline-separated assignments
// (READY=1, STOPPING=1, WATCHDOG=1, STATUS=…) to the AF_UNIX socket systemd names in
// $NOTIFY_SOCKET — a path, or an abstract-namespace name when it starts with '@'.

import CameraCore
import Foundation
import SystemSupport

public struct SystemdNotifier: Sendable {
    /// $NOTIFY_SOCKET as systemd gave it.
    public let address: String

    /// Nil when the service manager asked for no notifications (not run by systemd, or not
    /// Type=notify): NOTIFY_SOCKET unset, empty, or neither a path nor '@name'.
    public init?(environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let a = environment["NOTIFY_SOCKET"], a.count > 1, a.hasPrefix("/") || a.hasPrefix("@") else { return nil }
        address = a
    }

    /// Sends `state` (e.g. "READY=1\nSTATUS=Listening") in one datagram. Errors name the call.
    public func notify(_ state: String) throws(SystemError) {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var path = Array(address.utf8)
        let abstract = path.first == UInt8(ascii: "@")
        if abstract { path[0] = 0 }  // Linux's abstract namespace: a leading NUL, no terminator.
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard path.count + (abstract ? 0 : 1) <= capacity else {
            throw SystemError(call: "NOTIFY_SOCKET \(address)", errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: path) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (abstract ? 0 : 1))

        let fd = try Sys.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, "AF_UNIX SOCK_DGRAM")
        defer { try? Sys.close(fd, "NOTIFY_SOCKET") }  // a datagram socket: nothing waits in it
        let bytes = Array(state.utf8)
        _ = try withUnsafePointer(to: &addr) { p throws(SystemError) in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa throws(SystemError) in
                try bytes.withUnsafeBufferPointer { b throws(SystemError) in
                    try Sys.sendto(fd, UnsafeRawBufferPointer(b), flags: Int32(MSG_NOSIGNAL), to: sa, length: length, address)
                }
            }
        }
    }

    /// Half of $WATCHDOG_USEC — the interval sd_watchdog_enabled(3) recommends — when the
    /// watchdog is on and meant for this process ($WATCHDOG_PID unset or ours).
    public static func watchdogInterval(environment: [String: String] = ProcessInfo.processInfo.environment,
                                        pid: Int32 = getpid()) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
        if let owner = environment["WATCHDOG_PID"], Int32(owner) != pid { return nil }
        return .microseconds(Int64(clamping: usec / 2))
    }

    /// Sends WATCHDOG=1 every `interval`, each time after `alive` returns (a wedged process
    /// stops pinging and systemd restarts it), until the task is cancelled.
    public func watchdog(every interval: Duration, alive: @escaping @Sendable () async -> Void,
                         failed: @escaping @Sendable (SystemError) -> Void) -> Task<Void, Never> {
        Task {
            while true {
                do { try await Alarm.sleep(for: interval) } catch { return }  // cancelled
                await alive()
                do throws(SystemError) { try notify("WATCHDOG=1") } catch { failed(error) }
            }
        }
    }
}
