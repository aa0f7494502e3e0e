// An IPv4 socket address and the calls that take one (bind, connect, getsockname): the one
// place a sockaddr_in is built and rebound to the sockaddr the kernel's calls want, each call
// through the funnel with its errno read once and named.

import Glibc

public struct IPv4SocketAddress: Sendable {
    public var raw: sockaddr_in

    public init(_ raw: sockaddr_in) { self.raw = raw }

    /// `dotted` ("127.0.0.1"; "0.0.0.0" is every address) and `port` (0: one the kernel picks).
    public init(_ dotted: String, port: UInt16) throws(SystemError) {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        guard inet_pton(AF_INET, dotted, &a.sin_addr) == 1 else { throw SystemError(call: "inet_pton \(dotted)", errno: EINVAL) }
        raw = a
    }

    public static func loopback(port: UInt16) -> IPv4SocketAddress {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = UInt32(INADDR_LOOPBACK).bigEndian
        return IPv4SocketAddress(a)
    }

    public var port: UInt16 { UInt16(bigEndian: raw.sin_port) }

    /// "a.b.c.d".
    public var host: String {
        let v = UInt32(bigEndian: raw.sin_addr.s_addr)
        return "\(v >> 24).\((v >> 16) & 0xff).\((v >> 8) & 0xff).\(v & 0xff)"
    }

    public var description: String { "\(host):\(port)" }

    public func bind(_ fd: Int32) throws(SystemError) {
        var a = raw
        _ = try Sys.valueOrErrno("bind \(description)") {
            withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
    }

    public func connect(_ fd: Int32) throws(SystemError) {
        var a = raw
        // Not retried on EINTR: the connection goes on being made, and a second connect is refused.
        _ = try Sys.valueOrErrno("connect \(description)", retryingEINTR: false) {
            withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
    }

    /// The address `fd` is bound to (the port the kernel picked for port 0).
    public static func local(of fd: Int32) throws(SystemError) -> IPv4SocketAddress {
        var a = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = try Sys.valueOrErrno("getsockname") {
            withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        }
        return IPv4SocketAddress(a)
    }
}
