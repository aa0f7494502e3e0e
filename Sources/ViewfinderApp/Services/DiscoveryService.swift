// WS-Discovery (issue 39): the device announces itself (Hello) on the ONVIF multicast group
// when it starts and leaves (Bye) when it stops, and answers each Probe that matches it with
// a ProbeMatch sent back to the asker — its XAddrs the device service on the address of the
// interface the probe came in on, first, so the asker gets an address it can reach. Runs
// only when the HTTP server listens beyond loopback: an address on a LAN that nothing
// listens on would send an NVR nowhere.

import Auth
import Foundation
import Logging
import ONVIF
import SystemSupport

final class DiscoveryService: Sendable {
    private let socket: UDPSocket
    private let endpoint: WSDiscovery.Endpoint
    /// The interfaces it announces on: (name, IPv4 address).
    private let interfaces: [(name: String, address: String)]
    private let httpPort: Int
    private let logger: Logger
    private let instance = Int(SystemSupport.Clock.now())
    private let counter = Locked(0)
    /// The reader: a receive (200 ms at most) and its answer each step, until `stop`.
    private let reader = Locked<SteppingThread?>(nil)

    /// The addresses HTTP can be reached at for `host` ("0.0.0.0": every non-loopback
    /// interface's), nil when there are none (loopback).
    static func interfaces(for host: String) -> [(name: String, address: String)] {
        let all = ((try? Sys.ipv4Addresses()) ?? []).filter { !$0.address.hasPrefix("127.") }
        if host == "0.0.0.0" { return all.map { ($0.interface, $0.address) } }
        return all.filter { $0.address == host }.map { ($0.interface, $0.address) }
    }

    /// The device's stable name in discovery: a UUID from the host's name and the first
    /// interface's MAC, the same at every start.
    static func endpointAddress(interfaces: [(name: String, address: String)]) -> String {
        let mac = interfaces.first.flatMap { try? Sys.link($0.name).mac } ?? ""
        let h = Hashes.sha1(Array("viewfinder:\((try? Sys.hostname()) ?? ""):\(mac)".utf8))
        var b = Array(h.prefix(16))
        b[6] = (b[6] & 0x0f) | 0x50  // version 5 (name-based, SHA-1)
        b[8] = (b[8] & 0x3f) | 0x80  // RFC 4122 variant
        let hex = b.map { String(format: "%02x", $0) }.joined()
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return "urn:uuid:" + parts.joined(separator: "-")
    }

    init(interfaces: [(name: String, address: String)], httpPort: Int, scopes: [String], logger: Logger) throws(SystemError) {
        socket = try UDPSocket(port: WSDiscovery.port)
        for i in interfaces { try socket.join(group: WSDiscovery.group, interfaceAddress: i.address) }
        self.interfaces = interfaces
        self.httpPort = httpPort
        self.logger = logger
        endpoint = WSDiscovery.Endpoint(address: Self.endpointAddress(interfaces: interfaces), scopes: scopes,
                                        xaddrs: interfaces.map { "http://\($0.address):\(httpPort)/onvif/device_service" })
    }

    private func next() -> (id: String, number: Int) {
        let n = counter.withLock { $0 += 1; return $0 }
        return ("urn:uuid:" + UUID().uuidString.lowercased(), n)
    }

    /// Hello on every interface, then answers probes on a thread of its own until `stop`.
    func start() {
        guard reader.withLock({ $0 == nil }) else { return }  // once: a second reader would run on, owned by no one
        let m = next()
        let hello = WSDiscovery.hello(endpoint, messageID: m.id, instance: instance, message: m.number)
        for i in interfaces {
            do { try socket.send(hello, to: WSDiscovery.group, port: WSDiscovery.port, via: i.address) } catch {
                logger.warning("onvif discovery: Hello on \(i.name) failed: \(error)")
            }
        }
        logger.info("onvif discovery: answering probes on \(interfaces.map(\.name).joined(separator: ", ")) as \(endpoint.address)")
        let thread = SteppingThread(name: "wsdiscovery", step: { [self] in
            do {
                if let d = try socket.receive(timeout: 200) { answer(d) }
            } catch {
                logger.warning("onvif discovery: \(error)")
                Thread.sleep(forTimeInterval: 0.2)  // a socket error: try again, not in a tight loop
            }
            return true
        })
        reader.withLock { $0 = thread }
    }

    private func answer(_ d: Datagram) {
        guard let probe = WSDiscovery.probe(d.bytes), WSDiscovery.matches(probe, endpoint) else { return }
        // The address of the interface the probe came in on, first.
        var answering = endpoint
        if let i = interfaces.firstIndex(where: { Sys.interfaceIndex($0.name) == d.interfaceIndex }), i > 0 {
            answering.xaddrs.insert(answering.xaddrs.remove(at: i), at: 0)
        }
        let m = next()
        do { try socket.send(WSDiscovery.probeMatches(probe, answering, messageID: m.id, instance: instance, message: m.number), to: d.from) } catch {
            logger.warning("onvif discovery: the ProbeMatch to \(IPv4SocketAddress(d.from).host) failed: \(error)")
        }
    }

    /// Bye on every interface; the thread has ended when this returns.
    func stop() {
        guard let thread = reader.withLock({ r in defer { r = nil }; return r }) else { return }
        thread.stop()
        let m = next()
        let bye = WSDiscovery.bye(endpoint, messageID: m.id, instance: instance, message: m.number)
        for i in interfaces { try? socket.send(bye, to: WSDiscovery.group, port: WSDiscovery.port, via: i.address) }
    }
}

extension Application {
    /// WS-Discovery where HTTP listens beyond loopback. A port it cannot take is logged, not
    /// fatal: the device is still added by address.
    func startDiscovery(port: Int) async {
        guard configuration.onvif.enabled else { return discoveryStatus.withLock { $0 = "off (onvif.enabled is false)" } }
        guard configuration.onvif.discovery else { return discoveryStatus.withLock { $0 = "off (onvif.discovery is false)" } }
        let interfaces = DiscoveryService.interfaces(for: configuration.server.host)
        guard !interfaces.isEmpty else {
            logger.info("onvif discovery: off while HTTP listens on \(configuration.server.host) only (add the device by address)")
            discoveryStatus.withLock { $0 = "off while HTTP listens on \(configuration.server.host) only" }
            return
        }
        let scopes = ONVIFScopes.fixed + (await ONVIFService(cameras: cameras, configuration: configuration, rtspPort: { nil }).scopes())
        do {
            let d = try DiscoveryService(interfaces: interfaces, httpPort: port, scopes: scopes, logger: logger)
            d.start()
            discovery.withLock { $0 = d }
            discoveryStatus.withLock { $0 = "on (\(interfaces.map { "\($0.name) \($0.address)" }.joined(separator: ", ")))" }
        } catch {
            logger.warning("onvif discovery: \(error) — the device is still added by its address")
            discoveryStatus.withLock { $0 = "off: \(error)" }
        }
    }
}
