// config.json's live H.264 sections: `live` (the encoder and how many may watch), `rtsp`
// (the RTSP server) and `webrtc` (WHEP's ICE servers).

import Foundation
import JSON
import Movie
import Session

extension Configuration {
    /// The live H.264 streams: seconds between unasked keyframes; the main stream's kbit/s cap
    /// (VBV; nil: the default at its size and rate); the sub stream; live clients (WHEP peers,
    /// RTSP clients, live.mp4 streams) at once, all cameras.
    public struct LiveSettings: Sendable, Equatable {
        public var keyframeInterval = 2.0, bitrate: Int?
        public var sub = SubStreamSettings()
        /// The H.264 encoders to try, in order: each probed at start, the first working one used,
        /// the next taking over a stream whose encoder fails.
        public var encoders = VideoEncoderKind.preferred
        public var maxClients = 50
    }

    /// `live.sub`: the sub stream's size (640 wide at the camera's aspect unless given; at most
    /// half the main stream's width and height whatever is given), rate and cap.
    public struct SubStreamSettings: Sendable, Equatable {
        public var width: Int?, height: Int?
        public var fps = 15, bitrate = 500

        func encoderSettings(keyframeInterval: Double) -> LiveEncoderSettings {
            var s = LiveEncoderSettings.sub
            s.keyframeInterval = keyframeInterval
            (s.width, s.height) = width == nil && height == nil ? (640, nil) : (width, height)
            (s.fps, s.bitrate) = (fps, bitrate)
            return s
        }
    }

    /// The RTSP server: `rtsp://host:port/<camera-id>` and `/main`.
    public struct RTSPSettings: Sendable, Equatable {
        public var enabled = true
        /// Where it listens; nil: where HTTP does (server.host).
        public var host: String?
        public var port = 8554
    }

    /// ONVIF (issue 39): the SOAP services, and WS-Discovery on UDP 3702 when the HTTP server
    /// listens beyond loopback.
    public struct ONVIFSettings: Sendable, Equatable {
        public var enabled = true
        public var discovery = true
    }

    /// WebRTC (WHEP): the STUN/TURN servers for clients beyond the LAN, as RTCIceServer.
    public struct WebRTCSettings: Sendable, Equatable {
        public var enabled = true
        /// A viewer that asked for no stream gets the main one or the sub one as its link allows.
        public var adaptive = true
        public var iceServers: [ICEServer] = []
        /// A TURN server that takes credentials minted from a shared secret: every peer gets
        /// its own, valid for `ttl` seconds; the secret never leaves the server.
        public var turn: TURNServer?
        /// The local ports a peer's ICE takes, UDP and passive ICE-TCP (a firewall's or a port
        /// forward's range): one a peer; nil: any the system gives.
        public var udpPorts: ClosedRange<Int>?
        /// Addresses or DNS names a router forwards `udpPorts` from: offered as host candidates
        /// on those ports (go2rtc's `candidates:`), for viewers beyond the router.
        public var publicAddresses: [String] = []
        public static let maxPublicAddresses = 8
    }

    /// coturn's `use-auth-secret` (the TURN REST scheme): a username "expiry:name" and its
    /// HMAC-SHA1 under `secret` as the password.
    public struct TURNServer: Sendable, Equatable {
        /// "turn:host:port[?transport=udp|tcp]" or "turns:host:port".
        public var urls: [String]
        public var secret: String
        /// How long a minted credential lasts, in seconds: a relayed viewer longer than it loses
        /// its relay at the allocation's next refresh (TURN checks it there too).
        public var ttl = 86_400
        public static let ttlRange = 60...604_800
    }

    public struct ICEServer: Sendable, Equatable {
        /// "stun:host:port", "turn:host:port" or "turns:host:port".
        public var urls: [String]
        public var username: String?
        public var credential: String?
    }

    static func decodeLive(_ root: JSONObjectReader, into c: inout Configuration) throws(JSONFieldError) {
        if let s = try root.object("live") {
            if let k = try s.double("keyframeInterval") {
                guard (0.5...10).contains(k) else { throw JSONFieldError(path: "live.keyframeInterval", problem: "seconds within 0.5…10") }
                c.live.keyframeInterval = k
            }
            c.live.bitrate = try s.int("bitrate", in: 100...100_000) ?? c.live.bitrate
            c.live.maxClients = try s.int("maxClients", in: 1...10_000) ?? c.live.maxClients
            if let list = s.value("encoders") {
                let known = VideoEncoderKind.h264.map(\.rawValue).joined(separator: ", ")
                guard case .array(let items) = list, !items.isEmpty else {
                    throw JSONFieldError(path: "live.encoders", problem: "expected a list of encoders to try in order (\(known))")
                }
                var kinds: [VideoEncoderKind] = []
                for (i, item) in items.enumerated() {
                    guard case .string(let name) = item, let kind = VideoEncoderKind(rawValue: name), kind.isH264 else {
                        throw JSONFieldError(path: "live.encoders[\(i)]", problem: "not an encoder: expected one of \(known)")
                    }
                    guard !kinds.contains(kind) else { throw JSONFieldError(path: "live.encoders[\(i)]", problem: "'\(name)' is listed twice") }
                    kinds.append(kind)
                }
                c.live.encoders = kinds
            }
            if let sub = try s.object("sub") {
                c.live.sub.width = try sub.int("width", in: 16...7680) ?? c.live.sub.width
                c.live.sub.height = try sub.int("height", in: 16...4320) ?? c.live.sub.height
                c.live.sub.fps = try sub.int("fps", in: 1...120) ?? c.live.sub.fps
                c.live.sub.bitrate = try sub.int("bitrate", in: 100...100_000) ?? c.live.sub.bitrate
                try sub.finish()
            }
            try s.finish()
        }
        if let s = try root.object("rtsp") {
            c.rtsp.enabled = try s.bool("enabled") ?? c.rtsp.enabled
            c.rtsp.host = try s.string("host") ?? c.rtsp.host
            c.rtsp.port = try s.int("port", in: 0...65535) ?? c.rtsp.port
            try s.finish()
        }
        if let s = try root.object("onvif") {
            c.onvif.enabled = try s.bool("enabled") ?? c.onvif.enabled
            c.onvif.discovery = try s.bool("discovery") ?? c.onvif.discovery
            try s.finish()
        }
        if let s = try root.object("webrtc") {
            c.webrtc.enabled = try s.bool("enabled") ?? c.webrtc.enabled
            c.webrtc.adaptive = try s.bool("adaptive") ?? c.webrtc.adaptive
            if let list = s.value("iceServers") {
                guard case .array(let items) = list else {
                    throw JSONFieldError(path: "webrtc.iceServers", problem: "expected a list of {\"urls\", \"username\", \"credential\"}")
                }
                c.webrtc.iceServers = try items.enumerated().map { i, item throws(JSONFieldError) in try iceServer(item, path: "webrtc.iceServers[\(i)]") }
            }
            if let t = s.value("turn") { c.webrtc.turn = try turnServer(t, path: "webrtc.turn") }
            if let p = s.value("udpPorts") {
                let shape = "[first, last]: two ports within 1024…65535, first ≤ last (one port: [p, p])"
                guard case .array(let a) = p, a.count == 2, case .number(let f) = a[0], case .number(let l) = a[1],
                      f == f.rounded(), l == l.rounded(), 1024 <= f, f <= l, l <= 65535 else {
                    throw JSONFieldError(path: "webrtc.udpPorts", problem: shape)
                }
                c.webrtc.udpPorts = Int(f)...Int(l)
            }
            if let list = s.value("publicAddresses") { c.webrtc.publicAddresses = try publicAddresses(list) }
            try s.finish()
        }
    }

    func validateLive() throws(JSONFieldError) {
        guard rtsp.enabled else { return }
        let host = rtsp.host ?? server.host
        var addr = in_addr()
        guard inet_pton(AF_INET, host, &addr) == 1 else { throw JSONFieldError(path: "rtsp.host", problem: "'\(host)' is not an IPv4 address") }
        if rtsp.port != 0 && (rtsp.port == server.port || server.listen.contains { $0.port == rtsp.port }) {
            throw JSONFieldError(path: "rtsp.port", problem: "\(rtsp.port) is already used by HTTP")
        }
        if !host.hasPrefix("127.") && auth.mode == .unconfigured {
            throw JSONFieldError(path: "auth", problem: "rtsp on \(host) is reachable from other machines and no users are configured; add one with `viewfinder user add NAME --role operator`, or write \"auth\": \"none\"")
        }
    }

    private static func iceServer(_ item: JSONValue, path: String) throws(JSONFieldError) -> ICEServer {
        let r = try JSONObjectReader(item, path: path)
        let urls = try iceURLs(r, path: path, schemes: ["stun", "turn", "turns"])
        let server = ICEServer(urls: urls, username: try r.string("username"), credential: try r.string("credential"))
        try r.finish()
        if urls.contains(where: { !$0.hasPrefix("stun:") }), server.username == nil || server.credential == nil {
            throw JSONFieldError(path: path, problem: "a TURN server needs \"username\" and \"credential\" (or use webrtc.turn with a shared secret)")
        }
        return server
    }

    /// Each an IPv4 or IPv6 address or a DNS name (resolved as each peer is made).
    private static func publicAddresses(_ list: JSONValue) throws(JSONFieldError) -> [String] {
        let path = "webrtc.publicAddresses"
        guard case .array(let items) = list, items.count <= WebRTCSettings.maxPublicAddresses else {
            throw JSONFieldError(path: path, problem: "expected a list of at most \(WebRTCSettings.maxPublicAddresses) addresses or DNS names")
        }
        return try items.enumerated().map { i, item throws(JSONFieldError) in
            guard case .string(let a) = item, Self.isAddressOrName(a) else {
                throw JSONFieldError(path: "\(path)[\(i)]", problem: "expected an IPv4 or IPv6 address or a DNS name (\"203.0.113.7\", \"cam.example.org\")")
            }
            return a
        }
    }

    /// An address inet_pton reads, or a name of RFC 1123's letters, digits, hyphens and dots
    /// (labels of 1…63, 253 in all): nothing else goes into an SDP line.
    static func isAddressOrName(_ s: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, s, &v4) == 1 || inet_pton(AF_INET6, s, &v6) == 1 { return true }
        let labels = s.split(separator: ".", omittingEmptySubsequences: false)
        return s.utf8.count <= 253 && labels.allSatisfy { l in
            (1...63).contains(l.utf8.count) && l.first != "-" && l.last != "-"
                && l.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D }
        }
    }

    private static func turnServer(_ item: JSONValue, path: String) throws(JSONFieldError) -> TURNServer {
        let r = try JSONObjectReader(item, path: path)
        let urls = try iceURLs(r, path: path, schemes: ["turn", "turns"])
        guard let secret = try r.string("secret"), !secret.isEmpty else {
            throw JSONFieldError(path: path + ".secret", problem: "required: the TURN server's static-auth-secret")
        }
        var t = TURNServer(urls: urls, secret: secret)
        t.ttl = try r.int("ttl", in: TURNServer.ttlRange) ?? t.ttl
        try r.finish()
        return t
    }

    /// `urls`: one URL or a list, each of one of `schemes`.
    private static func iceURLs(_ r: JSONObjectReader, path: String, schemes: [String]) throws(JSONFieldError) -> [String] {
        var urls: [String] = []
        let shape = "\"\(schemes[0]):host:port\" or a list"
        switch r.value("urls") {
        case .string(let u): urls = [u]
        case .array(let a):
            for case .string(let u) in a { urls.append(u) }
            guard urls.count == a.count, !urls.isEmpty else { throw JSONFieldError(path: path + ".urls", problem: "expected \(shape)") }
        default: throw JSONFieldError(path: path + ".urls", problem: "required (\(shape))")
        }
        for u in urls {
            guard let scheme = u.split(separator: ":", maxSplits: 1).first, schemes.contains(String(scheme)), u.count > scheme.count + 1 else {
                let names = schemes.map { $0 + ":" }
                let list = names.count > 1 ? names.dropLast().joined(separator: ", ") + " or " + names.last! : names[0]
                throw JSONFieldError(path: path + ".urls", problem: "'\(u)' is not a \(list) URL")
            }
        }
        return urls
    }

    /// For check-config (ConfigurationJSON), with its string quoting.
    func liveJSON(_ str: (String?) -> String) -> [(String, String)] {
        // Built from named parts: as one expression of `+` and `??` it took the type checker
        // two seconds.
        func number(_ n: Int?) -> String { n.map { String($0) } ?? "null" }
        let servers: [String] = webrtc.iceServers.map { (s: ICEServer) -> String in
            let urls: String = s.urls.map { str($0) }.joined(separator: ", ")
            let username: String = s.username.map { ", \"username\": \(str($0))" } ?? ""
            let credential: String = s.credential.map { ", \"credential\": \(str($0))" } ?? ""
            return "{\"urls\": [\(urls)]\(username)\(credential)}"
        }
        let turn: String = webrtc.turn.map { t in
            ", \"turn\": {\"urls\": [" + t.urls.map { str($0) }.joined(separator: ", ") + "], \"secret\": \(str(t.secret)), \"ttl\": \(t.ttl)}"
        } ?? ""
        let ports: String = webrtc.udpPorts.map { ", \"udpPorts\": [\($0.lowerBound), \($0.upperBound)]" } ?? ""
            + (webrtc.publicAddresses.isEmpty ? "" : ", \"publicAddresses\": [" + webrtc.publicAddresses.map { str($0) }.joined(separator: ", ") + "]")
        let sub = "{\"width\": \(number(live.sub.width)), \"height\": \(number(live.sub.height)), "
            + "\"fps\": \(live.sub.fps), \"bitrate\": \(live.sub.bitrate)}"
        let encoders: String = live.encoders.map { str($0.rawValue) }.joined(separator: ", ")
        return [
            ("live", "{\"keyframeInterval\": \(live.keyframeInterval), \"bitrate\": \(number(live.bitrate)), \"sub\": \(sub), "
                + "\"encoders\": [\(encoders)], \"maxClients\": \(live.maxClients)}"),
            ("rtsp", "{\"enabled\": \(rtsp.enabled), \"host\": \(str(rtsp.host)), \"port\": \(rtsp.port)}"),
            ("onvif", "{\"enabled\": \(onvif.enabled), \"discovery\": \(onvif.discovery)}"),
            ("webrtc", "{\"enabled\": \(webrtc.enabled), \"adaptive\": \(webrtc.adaptive), \"iceServers\": [" + servers.joined(separator: ", ") + "]" + turn + ports + "}"),
        ]
    }
}
