// A UDP socket for a multicast protocol (WS-Discovery): bound to a port on every address,
// joined to a group on chosen interfaces, reading datagrams with the interface each came in
// on (IP_PKTINFO) so that an answer can name an address the asker can reach. One owner of the
// descriptor; every call through the funnel, errno read once and named.

import Glibc

public struct Datagram: Sendable {
    public var bytes: [UInt8]
    /// Where it came from (for the unicast answer).
    public var from: sockaddr_in
    /// The interface it arrived on (its index), 0 when the kernel did not say.
    public var interfaceIndex: Int32
}

public final class UDPSocket: Sendable {  // the descriptor is immutable; reads and writes are the kernel's to order
    public let fd: Int32

    /// A socket on `port` of every IPv4 address (SO_REUSEADDR: other ONVIF servers on the host
    /// may listen to the same group), with IP_PKTINFO on.
    public init(port: UInt16) throws(SystemError) {
        fd = try Sys.socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, "UDP :\(port)")
        do {
            try option(SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR")
            try option(Int32(IPPROTO_IP), IP_PKTINFO, 1, "IP_PKTINFO")
            try IPv4SocketAddress("0.0.0.0", port: port).bind(fd)
        } catch {
            try? Sys.close(fd, "UDP :\(port)")
            throw error
        }
    }

    deinit { try? Sys.close(fd, "UDP socket") }

    private func option(_ level: Int32, _ name: Int32, _ value: Int32, _ what: String) throws(SystemError) {
        var v = value
        _ = try Sys.valueOrErrno("setsockopt \(what)") { setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size)) }
    }

    /// Joins `group` ("239.255.255.250") on the interface holding `interfaceAddress`.
    public func join(group: String, interfaceAddress: String) throws(SystemError) {
        var m = ip_mreq()
        m.imr_multiaddr = try Self.address(group)
        m.imr_interface = try Self.address(interfaceAddress)
        _ = try Sys.valueOrErrno("setsockopt IP_ADD_MEMBERSHIP \(group) on \(interfaceAddress)") {
            setsockopt(fd, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &m, socklen_t(MemoryLayout<ip_mreq>.size))
        }
    }

    /// Sends `bytes` to `host:port`, out of the interface holding `interfaceAddress` when given
    /// (a multicast's way out).
    public func send(_ bytes: [UInt8], to host: String, port: UInt16, via interfaceAddress: String? = nil) throws(SystemError) {
        if let interfaceAddress {
            var a = try Self.address(interfaceAddress)
            _ = try Sys.valueOrErrno("setsockopt IP_MULTICAST_IF \(interfaceAddress)") {
                setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &a, socklen_t(MemoryLayout<in_addr>.size))
            }
        }
        try send(bytes, to: try IPv4SocketAddress(host, port: port).raw)
    }

    public func send(_ bytes: [UInt8], to address: sockaddr_in) throws(SystemError) {
        var to = address
        _ = try Sys.valueOrErrno("sendto UDP \(IPv4SocketAddress(address).description)") {
            withUnsafePointer(to: &to) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { s in
                    bytes.withUnsafeBytes { b in
                        Glibc.sendto(fd, b.baseAddress, b.count, Int32(MSG_NOSIGNAL), s, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
        }
    }

    /// The next datagram, waiting up to `timeout` milliseconds; nil when none came.
    public func receive(timeout: Int32, maxBytes: Int = 65_536) throws(SystemError) -> Datagram? {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard try Sys.poll(&p, timeout: timeout, "UDP") > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: maxBytes)
        var from = sockaddr_in()
        var control = [UInt8](repeating: 0, count: 256)
        var controlLength = 0
        let n = try Sys.valueOrErrno("recvmsg UDP") { () -> Int in
            buffer.withUnsafeMutableBytes { b in
                control.withUnsafeMutableBytes { c in
                    withUnsafeMutablePointer(to: &from) { f in
                        var iov = iovec(iov_base: b.baseAddress, iov_len: b.count)
                        return withUnsafeMutablePointer(to: &iov) { v in
                            var msg = msghdr(msg_name: UnsafeMutableRawPointer(f), msg_namelen: socklen_t(MemoryLayout<sockaddr_in>.size),
                                             msg_iov: v, msg_iovlen: 1, msg_control: c.baseAddress, msg_controllen: c.count, msg_flags: 0)
                            let got = recvmsg(fd, &msg, Int32(MSG_DONTWAIT))
                            controlLength = Int(msg.msg_controllen)
                            return got
                        }
                    }
                }
            }
        }
        return Datagram(bytes: Array(buffer.prefix(n)), from: from, interfaceIndex: Self.pktinfoInterface(Array(control.prefix(controlLength))))
    }

    /// The interface index in an IP_PKTINFO control message, 0 without one.
    private static func pktinfoInterface(_ control: [UInt8]) -> Int32 {
        let header = MemoryLayout<cmsghdr>.size
        var offset = 0
        return control.withUnsafeBytes { raw -> Int32 in
            while offset + header <= raw.count {
                let h = raw.loadUnaligned(fromByteOffset: offset, as: cmsghdr.self)
                guard h.cmsg_len >= header else { return 0 }
                if h.cmsg_level == Int32(IPPROTO_IP) && h.cmsg_type == IP_PKTINFO && offset + header + MemoryLayout<in_pktinfo>.size <= raw.count {
                    return raw.loadUnaligned(fromByteOffset: offset + header, as: in_pktinfo.self).ipi_ifindex
                }
                offset += (Int(h.cmsg_len) + MemoryLayout<Int>.size - 1) & ~(MemoryLayout<Int>.size - 1)
            }
            return 0
        }
    }

    static func address(_ dotted: String) throws(SystemError) -> in_addr { try IPv4SocketAddress(dotted, port: 0).raw.sin_addr }

}

extension Sys {
    /// An interface's index (if_nametoindex), 0 when there is none by that name.
    public static func interfaceIndex(_ name: String) -> Int32 { Int32(bitPattern: if_nametoindex(name)) }
}
