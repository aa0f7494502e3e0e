// config.json's live H.264 sections: `live` (the encoder and how many may watch), `rtsp`
// (the RTSP server) and `webrtc` (WHEP's ICE servers).

import Foundation
import JSON

extension Configuration {
    /// The live H.264 stream: seconds between unasked keyframes; a kbit/s cap (VBV), else
    /// CRF 23; live clients (WHEP peers, RTSP clients, live.mp4 streams) at once, all cameras.
    public struct LiveSettings: Sendable, Equatable {
        public var keyframeInterval = 2.0, bitrate: Int?
        public var maxClients = 50
    }

    /// The RTSP server: `rtsp://host:port/<camera-id>` and `/main`.
    public struct RTSPSettings: Sendable, Equatable {
        public var enabled = true
        /// Where it listens; nil: where HTTP does (server.host).
        public var host: String?
        public var port = 8554
    }

    /// WebRTC (WHEP): the STUN/TURN servers for clients beyond the LAN, as RTCIceServer.
    public struct WebRTCSettings: Sendable, Equatable {
        public var enabled = true
        public var iceServers: [ICEServer] = []
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
            try s.finish()
        }
        if let s = try root.object("rtsp") {
            c.rtsp.enabled = try s.bool("enabled") ?? c.rtsp.enabled
            c.rtsp.host = try s.string("host") ?? c.rtsp.host
            c.rtsp.port = try s.int("port", in: 0...65535) ?? c.rtsp.port
            try s.finish()
        }
        if let s = try root.object("webrtc") {
            c.webrtc.enabled = try s.bool("enabled") ?? c.webrtc.enabled
            if let list = s.value("iceServers") {
                guard case .array(let items) = list else {
                    throw JSONFieldError(path: "webrtc.iceServers", problem: "expected a list of {\"urls\", \"username\", \"credential\"}")
                }
                c.webrtc.iceServers = try items.enumerated().map { i, item throws(JSONFieldError) in try iceServer(item, path: "webrtc.iceServers[\(i)]") }
            }
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
        var urls: [String] = []
        switch r.value("urls") {
        case .string(let u): urls = [u]
        case .array(let a):
            for case .string(let u) in a { urls.append(u) }
            guard urls.count == a.count else { throw JSONFieldError(path: path + ".urls", problem: "expected strings") }
        default: throw JSONFieldError(path: path + ".urls", problem: "required (\"stun:host:port\" or a list)")
        }
        let server = ICEServer(urls: urls, username: try r.string("username"), credential: try r.string("credential"))
        try r.finish()
        for u in urls {
            guard let scheme = u.split(separator: ":", maxSplits: 1).first, ["stun", "turn", "turns"].contains(scheme), u.count > scheme.count + 1 else {
                throw JSONFieldError(path: path + ".urls", problem: "'\(u)' is not a stun:, turn: or turns: URL")
            }
            if scheme != "stun" && (server.username == nil || server.credential == nil) {
                throw JSONFieldError(path: path, problem: "a TURN server needs \"username\" and \"credential\"")
            }
        }
        return server
    }

    /// For check-config (ConfigurationJSON), with its string quoting.
    func liveJSON(_ str: (String?) -> String) -> [(String, String)] {
        let servers = webrtc.iceServers.map { s in
            "{\"urls\": [" + s.urls.map { str($0) }.joined(separator: ", ") + "]"
                + (s.username.map { ", \"username\": \(str($0))" } ?? "") + (s.credential.map { ", \"credential\": \(str($0))" } ?? "") + "}"
        }
        return [
            ("live", "{\"keyframeInterval\": \(live.keyframeInterval), \"bitrate\": \(live.bitrate.map { "\($0)" } ?? "null"), \"maxClients\": \(live.maxClients)}"),
            ("rtsp", "{\"enabled\": \(rtsp.enabled), \"host\": \(str(rtsp.host)), \"port\": \(rtsp.port)}"),
            ("webrtc", "{\"enabled\": \(webrtc.enabled), \"iceServers\": [" + servers.joined(separator: ", ") + "]}"),
        ]
    }
}
