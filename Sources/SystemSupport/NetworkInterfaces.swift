// The host's name and its network interfaces with their IPv4 addresses (getifaddrs), and a
// link's hardware address and MTU as the kernel reports them in sysfs — what an ONVIF client
// asks to tell one device from another.

import Glibc

public struct InterfaceAddress: Sendable, Equatable {
    public var interface: String
    /// Dotted IPv4.
    public var address: String
    public var prefixLength: Int
}

extension Sys {
    public static func hostname() throws(SystemError) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        _ = try valueOrErrno("gethostname") { gethostname(&buffer, buffer.count - 1) }
        return String(cString: buffer)
    }

    /// Every interface's IPv4 addresses, in the kernel's order.
    public static func ipv4Addresses() throws(SystemError) -> [InterfaceAddress] {
        var list: UnsafeMutablePointer<ifaddrs>?
        _ = try valueOrErrno("getifaddrs") { getifaddrs(&list) }
        defer { freeifaddrs(list) }
        var out: [InterfaceAddress] = []
        var p = list
        while let a = p {
            defer { p = a.pointee.ifa_next }
            guard let addr = a.pointee.ifa_addr, addr.pointee.sa_family == sa_family_t(AF_INET) else { continue }
            let ip = addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            let mask = a.pointee.ifa_netmask.map { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr } } ?? 0
            out.append(InterfaceAddress(interface: String(cString: a.pointee.ifa_name), address: dotted(ip),
                                        prefixLength: UInt32(bigEndian: mask).nonzeroBitCount))
        }
        return out
    }

    private static func dotted(_ a: in_addr) -> String {
        let v = UInt32(bigEndian: a.s_addr)
        return "\(v >> 24).\((v >> 16) & 0xff).\((v >> 8) & 0xff).\(v & 0xff)"
    }

    /// A link's hardware address ("aa:bb:…") and MTU, from /sys/class/net/<name>/.
    public static func link(_ name: String) throws(SystemError) -> (mac: String, mtu: Int) {
        let mac = try readText("/sys/class/net/\(name)/address").filter { !$0.isWhitespace }
        let mtu = Int(try readText("/sys/class/net/\(name)/mtu").filter { !$0.isWhitespace }) ?? 1500
        return (mac, mtu)
    }
}
