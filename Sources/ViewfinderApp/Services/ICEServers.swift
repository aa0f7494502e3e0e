// webrtc.iceServers as webrtcbin takes them: one place for WHEP's peers and talk-back's.

import Foundation
import Streaming

extension Application {
    /// webrtc.iceServers as webrtcbin takes them, and the addresses to gather on (where HTTP listens).
    static func ice(_ c: Configuration) -> ICEConfiguration {
        func gstURL(_ url: String, _ s: Configuration.ICEServer) -> String {
            let parts = url.split(separator: ":", maxSplits: 1).map(String.init)
            let hostPort = parts.count > 1 ? String(parts[1].split(separator: "?").first ?? "") : ""
            guard parts[0] != "stun" else { return "stun://" + hostPort }
            let enc = { (x: String) in x.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? x }
            return "\(parts[0])://\(enc(s.username ?? "")):\(enc(s.credential ?? ""))@\(hostPort)"
        }
        let all = c.webrtc.iceServers.flatMap { s in s.urls.map { gstURL($0, s) } }
        let host = c.server.host
        return ICEConfiguration(stunServer: all.first { $0.hasPrefix("stun://") }, turnServers: all.filter { !$0.hasPrefix("stun://") },
                                addresses: host == "0.0.0.0" ? [] : [host])
    }
}
