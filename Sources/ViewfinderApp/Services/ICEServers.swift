// webrtc.iceServers and webrtc.turn, for the server's own peers (webrtcbin's URL forms: WHEP's
// and talk-back's) and for a viewer (RTCIceServer's shape: WHEP's Link headers and
// `GET /api/webrtc/ice-servers`, which the page asks before it makes its connection).
//
// A TURN server with a shared secret (`webrtc.turn`, coturn's `use-auth-secret`: the TURN REST
// scheme) gets credentials minted for each peer as it is made — a username "expiry:name" and its
// HMAC-SHA1 under the secret — so what a viewer is handed lapses after `ttl` and the secret never
// leaves the server. A TURN server with a long-lived password in `webrtc.iceServers` is the
// server's own: a viewer is handed its STUN servers only, never that password.

import Auth
import Foundation
import Streaming
import SystemSupport

struct ICEServers: Sendable {
    let webrtc: Configuration.WebRTCSettings
    /// Where HTTP listens: the host candidates' addresses.
    let host: String
    /// Wall-clock seconds: a credential's expiry is TURN's Unix time.
    let now: @Sendable () -> Double

    init(_ c: Configuration, now: @escaping @Sendable () -> Double = { Clock.now() }) {
        webrtc = c.webrtc
        host = c.server.host
        self.now = now
    }

    /// A credential for `name` from `turn`'s secret, valid until now + its ttl.
    static func mint(_ turn: Configuration.TURNServer, name: String, now: Double) -> (username: String, credential: String) {
        let username = "\(Int(now) + turn.ttl):\(name)"
        return (username, Data(Hashes.hmacSHA1(key: turn.secret, username)).base64EncodedString())
    }

    /// For the server's own peer: webrtcbin's STUN and TURN URLs, the addresses to gather on
    /// and the ports to take.
    func forServer() -> ICEConfiguration {
        func gstURL(_ url: String, username: String?, credential: String?) -> String {
            let parts = url.split(separator: ":", maxSplits: 1).map(String.init)
            let hostPort = parts.count > 1 ? String(parts[1].split(separator: "?").first ?? "") : ""
            guard parts[0] != "stun" else { return "stun://" + hostPort }
            let enc = { (x: String) in x.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? x }
            return "\(parts[0])://\(enc(username ?? "")):\(enc(credential ?? ""))@\(hostPort)"
        }
        var all = webrtc.iceServers.flatMap { s in s.urls.map { gstURL($0, username: s.username, credential: s.credential) } }
        if let turn = webrtc.turn {
            let minted = Self.mint(turn, name: "viewfinder", now: now())
            all += turn.urls.map { gstURL($0, username: minted.username, credential: minted.credential) }
        }
        return ICEConfiguration(stunServer: all.first { $0.hasPrefix("stun://") }, turnServers: all.filter { !$0.hasPrefix("stun://") },
                                addresses: host == "0.0.0.0" ? [] : [host], ports: webrtc.udpPorts)
    }

    /// What a viewer `name` is handed: each STUN server of `webrtc.iceServers` (no credentials)
    /// and `webrtc.turn` with a credential minted for it.
    func forViewer(_ name: String) -> [Configuration.ICEServer] {
        let stun = webrtc.iceServers.flatMap { s in s.urls.filter { $0.hasPrefix("stun:") } }
        var out = stun.map { Configuration.ICEServer(urls: [$0], username: nil, credential: nil) }
        if let turn = webrtc.turn {
            let minted = Self.mint(turn, name: name, now: now())
            out.append(Configuration.ICEServer(urls: turn.urls, username: minted.username, credential: minted.credential))
        }
        return out
    }

    /// WHEP's Link headers for a viewer (draft-ietf-wish-whep's `rel="ice-server"`).
    func links(for name: String) -> [(String, String)] {
        forViewer(name).flatMap { s in
            s.urls.map { url in
                var link = "<\(url)>; rel=\"ice-server\""
                if let u = s.username, let c = s.credential {
                    link += "; username=\"\(u)\"; credential=\"\(c)\"; credential-type=\"password\""
                }
                return ("Link", link)
            }
        }
    }

    /// RTCIceServer, as the page passes it to RTCPeerConnection (a STUN server has no credentials).
    struct Viewer: Encodable, Equatable {
        var urls: [String]
        var username: String?
        var credential: String?
    }

    /// `{"iceServers": [RTCIceServer…]}` for a viewer.
    func viewerJSON(for name: String) -> [String: [Viewer]] {
        ["iceServers": forViewer(name).map { Viewer(urls: $0.urls, username: $0.username, credential: $0.credential) }]
    }
}
