// webrtc.iceServers and webrtc.turn, for the server's own peers (webrtcbin's URL forms: WHEP's
// and talk-back's) and for a viewer (RTCIceServer's shape: WHEP's Link headers and
// `GET /api/webrtc/ice-servers`, which the page asks before it makes its connection).
//
// A TURN server with a shared secret (`webrtc.turn`, coturn's `use-auth-secret`: the TURN REST
// scheme) gets credentials minted for each peer as it is made — a username "expiry:name" and its
// HMAC-SHA1 under the secret — so what a viewer is handed lapses after `ttl` and the secret never
// leaves the server. A TURN server with a long-lived password in `webrtc.iceServers` is the
// server's own: a viewer is handed its STUN servers only, never that password.
//
// webrtc.publicAddresses (a router's address that forwards webrtc.udpPorts here) are resolved
// as each peer is made, on its own thread: a dynamic-DNS name is followed as it moves.

import Auth
import Foundation
import Logging
import Streaming
import SystemSupport

struct ICEServers: Sendable {
    let webrtc: Configuration.WebRTCSettings
    /// Where HTTP listens: the host candidates' addresses.
    let host: String
    /// Wall-clock seconds: a credential's expiry is TURN's Unix time.
    let now: @Sendable () -> Double
    /// A name's numeric addresses (getaddrinfo).
    typealias Resolver = @Sendable (String) throws(NameResolutionError) -> [String]
    let resolve: Resolver
    let logger: Logger

    init(_ c: Configuration, now: @escaping @Sendable () -> Double = { Clock.now() },
         resolve: @escaping Resolver = { name throws(NameResolutionError) in try Sys.addresses(of: name) },
         logger: Logger = Logger(label: "viewfinder.webrtc")) {
        webrtc = c.webrtc
        host = c.server.host
        self.now = now
        self.resolve = resolve
        self.logger = logger
    }

    /// A credential for `name` from `turn`'s secret, valid until now + its ttl.
    static func mint(_ turn: Configuration.TURNServer, name: String, now: Double) -> (username: String, credential: String) {
        let username = "\(Int(now) + turn.ttl):\(name)"
        return (username, Data(Hashes.hmacSHA1(key: turn.secret, username)).base64EncodedString())
    }

    /// For the server's own peer: webrtcbin's STUN and TURN URLs, the addresses to gather on,
    /// the ports to take and the public addresses to offer. Blocks while a public address's
    /// name is resolved: call it off the request threads (where the peer is made).
    func forServer() -> ICEConfiguration {
        func gstURL(_ url: String, username: String?, credential: String?) -> String {
            let parts = url.split(separator: ":", maxSplits: 1).map(String.init)
            let rest = parts.count > 1 ? parts[1].split(separator: "?", maxSplits: 1).map(String.init) : [""]
            let hostPort = rest[0]
            guard parts[0] != "stun" else { return "stun://" + hostPort }
            // TURN over TCP is libnice's where the URL says so (webrtcbin reads "?transport=").
            let query = rest.count > 1 && rest[1].hasPrefix("transport=") ? "?" + rest[1] : ""
            let enc = { (x: String) in x.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? x }
            return "\(parts[0])://\(enc(username ?? "")):\(enc(credential ?? ""))@\(hostPort)\(query)"
        }
        var all = webrtc.iceServers.flatMap { s in s.urls.map { gstURL($0, username: s.username, credential: s.credential) } }
        if let turn = webrtc.turn {
            let minted = Self.mint(turn, name: "viewfinder", now: now())
            all += turn.urls.map { gstURL($0, username: minted.username, credential: minted.credential) }
        }
        return ICEConfiguration(stunServer: all.first { $0.hasPrefix("stun://") }, turnServers: all.filter { !$0.hasPrefix("stun://") },
                                addresses: host == "0.0.0.0" ? [] : [host], ports: webrtc.udpPorts, publicAddresses: publicAddresses())
    }

    /// webrtc.publicAddresses, numeric, each once; a name that does not resolve now is left out
    /// (and said): the answer goes with the rest.
    func publicAddresses() -> [String] {
        var out: [String] = []
        for entry in webrtc.publicAddresses {
            do throws(NameResolutionError) {
                for a in try resolve(entry) where !out.contains(a) { out.append(a) }
            } catch {
                logger.warning("webrtc.publicAddresses: \(error); the answer goes without '\(entry)'")
            }
        }
        return out
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
