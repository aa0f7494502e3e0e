// config.json's `mqtt`: the broker (a URL), the credentials (a password *file*: config.json is
// often world-readable), TLS files, this host's node name, and what goes over the broker.

import Auth
import Foundation
import JSON
import MQTT
import SystemSupport

extension Configuration {
    public struct MQTTSettings: Sendable, Equatable {
        /// `mqtt://host[:1883]` or `mqtts://host[:8883]`; nil: no MQTT.
        public var url: String?
        public var username: String?
        /// A file holding the password (its first line).
        public var passwordFile: String?
        /// The broker's CA (PEM) for mqtts; nil: the system's CAs.
        public var caFile: String?
        /// A client certificate and key (PEM), for a broker that asks for one.
        public var certificateFile: String?
        public var keyFile: String?
        /// This host in topics and Home Assistant ids: letters, digits, `_` and `-`.
        public var node = MQTTSettings.defaultNode()
        public var topicPrefix = "viewfinder"
        /// What a command over MQTT may do, as a user of that role over HTTP.
        public var role = Role.operator
        /// Home Assistant MQTT discovery, under `discoveryPrefix`.
        public var discovery = true
        public var discoveryPrefix = "homeassistant"
        /// Seconds between JPEG snapshots on `…/snapshot`; nil: after captures only.
        public var snapshotInterval: Double?
        /// A camera's state goes out at most this often (the newest wins).
        public var stateInterval = 0.25
        /// Seconds between pings; the broker publishes our `offline` 1.5 × this after we vanish.
        public var keepAlive = 10
        /// Takes part in `<topicPrefix>/fleet/capture`.
        public var fleet = true

        public var isEnabled: Bool { url != nil }

        /// The host name, kept to what a topic level and an HA id may hold.
        public static func defaultNode() -> String {
            let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "viewfinder"
            let safe = String(MQTTTopics.level(host).prefix(64))
            return safe.isEmpty ? "viewfinder" : safe
        }

        static func isSafeName(_ s: String) -> Bool { !s.isEmpty && s.count <= 64 && MQTTTopics.level(s) == s }

        /// Host, port and TLS from `url`.
        public func endpoint() throws(JSONFieldError) -> (host: String, port: Int, tls: Bool)? {
            guard let url else { return nil }
            let scheme: String, rest: Substring
            if url.hasPrefix("mqtt://") { scheme = "mqtt"; rest = url.dropFirst(7) }
            else if url.hasPrefix("mqtts://") { scheme = "mqtts"; rest = url.dropFirst(8) }
            else { throw JSONFieldError(path: "mqtt.url", problem: "expected mqtt://host[:port] or mqtts://host[:port], found '\(url)'") }
            let authority = rest.hasSuffix("/") ? rest.dropLast() : rest
            var host = String(authority), port = scheme == "mqtts" ? 8883 : 1883
            if authority.hasPrefix("[") {  // [IPv6]:port
                guard let close = authority.firstIndex(of: "]") else { throw JSONFieldError(path: "mqtt.url", problem: "an IPv6 host needs its ']'") }
                host = String(authority[authority.index(after: authority.startIndex)..<close])
                let after = authority[authority.index(after: close)...]
                if after.hasPrefix(":") { guard let p = Int(after.dropFirst()) else { throw Self.badPort(url) }; port = p }
                else if !after.isEmpty { throw Self.badPort(url) }
            } else if let colon = authority.lastIndex(of: ":") {
                guard let p = Int(authority[authority.index(after: colon)...]) else { throw Self.badPort(url) }
                host = String(authority[..<colon])
                port = p
            }
            guard !host.isEmpty, !host.contains("/"), !host.contains("@") else {
                throw JSONFieldError(path: "mqtt.url", problem: "expected a host (credentials go in username and passwordFile), found '\(url)'")
            }
            guard (1...65535).contains(port) else { throw Self.badPort(url) }
            return (host, port, scheme == "mqtts")
        }

        private static func badPort(_ url: String) -> JSONFieldError {
            JSONFieldError(path: "mqtt.url", problem: "expected a port 1…65535 in '\(url)'")
        }

        /// The client's options, the password read from its file now.
        func options(will: MQTTMessage) throws(Configuration.Error) -> MQTTOptions? {
            let endpoint: (host: String, port: Int, tls: Bool)?
            do { endpoint = try self.endpoint() } catch { throw Configuration.Error(description: error.description) }
            guard let endpoint else { return nil }
            var password: String?
            if let file = passwordFile {
                let text: String
                do { text = try Sys.readText(file) } catch {
                    throw Configuration.Error(description: "mqtt.passwordFile: cannot read \(file): \(error)")
                }
                password = String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
            }
            let tls = endpoint.tls || caFile != nil || certificateFile != nil
                ? MQTTOptions.TLS(caFile: caFile, certificateFile: certificateFile, keyFile: keyFile) : nil
            return MQTTOptions(host: endpoint.host, port: endpoint.port, tls: tls, username: username, password: password,
                               clientID: "viewfinder-\(node)", keepAlive: keepAlive, will: will)
        }
    }

    static func decodeMQTT(_ root: JSONObjectReader, into c: inout Configuration) throws(JSONFieldError) {
        guard let m = try root.object("mqtt") else { return }
        var s = MQTTSettings()
        s.url = try m.string("url")
        s.username = try m.string("username")
        s.passwordFile = try m.string("passwordFile")
        s.caFile = try m.string("caFile")
        s.certificateFile = try m.string("certificateFile")
        s.keyFile = try m.string("keyFile")
        if (s.certificateFile == nil) != (s.keyFile == nil) {
            throw JSONFieldError(path: "mqtt.certificateFile", problem: "a client certificate needs its keyFile, and a keyFile its certificateFile")
        }
        for (key, value) in [("node", try m.string("node")), ("topicPrefix", try m.string("topicPrefix")),
                             ("discoveryPrefix", try m.string("discoveryPrefix"))] {
            guard let value else { continue }
            guard MQTTSettings.isSafeName(value) else {
                throw JSONFieldError(path: "mqtt.\(key)", problem: "letters, digits, '_' and '-' only (a topic level and a Home Assistant id), found '\(value)'")
            }
            switch key {
            case "node": s.node = value
            case "topicPrefix": s.topicPrefix = value
            default: s.discoveryPrefix = value
            }
        }
        if let r = try m.string("role", allowed: Role.allCases.map(\.rawValue)) { s.role = Role(rawValue: r)! }
        s.discovery = try m.bool("discovery") ?? s.discovery
        s.snapshotInterval = try m.double("snapshotInterval", in: 0.5...86400)
        s.stateInterval = try m.double("stateInterval", in: 0...60) ?? s.stateInterval
        s.keepAlive = try m.int("keepAlive", in: 5...3600) ?? s.keepAlive
        s.fleet = try m.bool("fleet") ?? s.fleet
        try m.finish()
        _ = try s.endpoint()  // the URL is checked now, not at the first connect
        c.mqtt = s
    }

    /// The effective `mqtt` section (the password never: only its file).
    func mqttJSON(_ str: (String) -> String) -> String {
        let m = mqtt
        var f: [(String, String)] = [("url", m.url.map(str) ?? "null")]
        for (k, v) in [("username", m.username), ("passwordFile", m.passwordFile), ("caFile", m.caFile),
                       ("certificateFile", m.certificateFile), ("keyFile", m.keyFile)] {
            if let v { f.append((k, str(v))) }
        }
        f += [("node", str(m.node)), ("topicPrefix", str(m.topicPrefix)), ("role", str(m.role.rawValue)),
              ("discovery", "\(m.discovery)"), ("discoveryPrefix", str(m.discoveryPrefix)),
              ("snapshotInterval", m.snapshotInterval.map { "\($0)" } ?? "null"), ("stateInterval", "\(m.stateInterval)"),
              ("keepAlive", "\(m.keepAlive)"), ("fleet", "\(m.fleet)")]
        return "{" + f.map { "\(str($0.0)): \($0.1)" }.joined(separator: ", ") + "}"
    }
}
