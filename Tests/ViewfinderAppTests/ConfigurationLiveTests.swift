// config.json's live sections: `live.maxClients`, `rtsp`, `webrtc.iceServers` and `webrtc.turn`
// read, each bad value named by its key, and the ICE servers handed to webrtcbin in its URL
// forms and to a viewer: a TURN credential minted from the shared secret (the TURN REST
// scheme, checked against Python's hmac), never the secret or a long-lived password.

import Foundation
import SystemSupport
import Testing
@testable import ViewfinderApp

@Suite struct ConfigurationLiveTests {
    func parse(_ text: String) throws -> Configuration { try Configuration.parse(Array(text.utf8)) }

    @Test func theSectionsRead() throws {
        let c = try parse("""
        {"live": {"maxClients": 7}, "rtsp": {"port": 9554, "host": "127.0.0.2"}, "onvif": {"discovery": false},
         "webrtc": {"iceServers": [{"urls": "stun:stun.example.net:3478"},
                                   {"urls": ["turn:turn.example.net:3478?transport=udp"], "username": "u@x", "credential": "p:w"}]}}
        """)
        #expect(c.live.maxClients == 7 && c.rtsp.port == 9554 && c.rtsp.host == "127.0.0.2" && c.rtsp.enabled)
        #expect(c.webrtc.iceServers.count == 2)
        #expect(c.onvif.enabled && !c.onvif.discovery)
        let ice = ICEServers(c).forServer()
        #expect(ice.stunServer == "stun://stun.example.net:3478")
        #expect(ice.turnServers == ["turn://u%40x:p%3Aw@turn.example.net:3478?transport=udp"])
        #expect(ice.addresses == ["127.0.0.1"], "host candidates where HTTP listens")
        #expect(try Configuration.parse(Array(c.jsonText.utf8)) == c, "check-config prints what parses back")
    }

    @Test func badValuesNameTheirKey() throws {
        for (text, message) in [
            (#"{"live": {"maxClients": 0}}"#, "live.maxClients"),
            (#"{"onvif": {"discovery": "yes"}}"#, "onvif.discovery"),
            (#"{"onvif": {"port": 80}}"#, "onvif.port"),
            (#"{"rtsp": {"port": 8080}}"#, "rtsp.port: 8080 is already used by HTTP"),
            (#"{"rtsp": {"host": "camera.local"}}"#, "rtsp.host: 'camera.local' is not an IPv4 address"),
            (#"{"rtsp": {"host": "0.0.0.0"}}"#, "auth: rtsp on 0.0.0.0 is reachable"),
            (#"{"rtsp": {"colour": 1}}"#, "rtsp.colour"),
            (#"{"webrtc": {"iceServers": [{"urls": "http://x"}]}}"#, "webrtc.iceServers[0].urls: 'http://x' is not a stun:, turn: or turns: URL"),
            (#"{"webrtc": {"iceServers": [{"urls": "turn:t:3478"}]}}"#, "webrtc.iceServers[0]: a TURN server needs"),
            (#"{"webrtc": {"iceServers": {}}}"#, "webrtc.iceServers: expected a list"),
            (#"{"webrtc": {"turn": {"urls": "turn:t:3478"}}}"#, "webrtc.turn.secret: required"),
            (#"{"webrtc": {"turn": {"urls": "stun:t:3478", "secret": "s"}}}"#, "webrtc.turn.urls: 'stun:t:3478' is not a turn: or turns: URL"),
            (#"{"webrtc": {"turn": {"urls": [], "secret": "s"}}}"#, "webrtc.turn.urls: expected"),
            (#"{"webrtc": {"turn": {"urls": "turn:t", "secret": "s", "ttl": 5}}}"#, "webrtc.turn.ttl"),
            (#"{"webrtc": {"turn": {"urls": "turn:t", "secret": "s", "password": "p"}}}"#, "webrtc.turn.password"),
            (#"{"webrtc": {"udpPorts": [50000]}}"#, "webrtc.udpPorts: [first, last]"),
            (#"{"webrtc": {"udpPorts": [50010, 50000]}}"#, "webrtc.udpPorts: [first, last]"),
            (#"{"webrtc": {"udpPorts": [80, 90]}}"#, "webrtc.udpPorts: [first, last]"),
            (#"{"webrtc": {"udpPorts": "50000-50010"}}"#, "webrtc.udpPorts: [first, last]"),
            (#"{"webrtc": {"publicAddresses": "203.0.113.7"}}"#, "webrtc.publicAddresses: expected a list"),
            (#"{"webrtc": {"publicAddresses": ["203.0.113.7", "cam example"]}}"#, "webrtc.publicAddresses[1]: expected an IPv4 or IPv6 address or a DNS name"),
            (#"{"webrtc": {"publicAddresses": ["a\r\na=candidate:x"]}}"#, "webrtc.publicAddresses[0]"),
            (#"{"webrtc": {"publicAddresses": [7]}}"#, "webrtc.publicAddresses[0]"),
            (#"{"webrtc": {"publicAddresses": ["-cam.example.org"]}}"#, "webrtc.publicAddresses[0]"),
            (#"{"webrtc": {"publicAddresses": ["1","2","3","4","5","6","7","8","9"]}}"#, "at most 8"),
        ] {
            #expect { try parse(text) } throws: { "\($0)".contains(message) }
        }
        // RTSP switched off: its port may be anything.
        #expect(try parse(#"{"rtsp": {"enabled": false, "port": 8080}}"#).rtsp.enabled == false)
    }

    /// webrtc.publicAddresses: addresses as they are, names resolved as each peer is made (a
    /// name that does not resolve now is left out, the rest kept), each address once.
    @Test func publicAddressesAreResolvedForEachPeer() throws {
        let c = try parse(#"{"webrtc": {"publicAddresses": ["203.0.113.7", "cam.example.org", "gone.example.org", "2001:db8::7"]}}"#)
        #expect(c.webrtc.publicAddresses.count == 4)
        #expect(try Configuration.parse(Array(c.jsonText.utf8)) == c, "check-config prints what parses back")
        let asked = Locked<[String]>([])
        let ice = ICEServers(c, resolve: { name throws(NameResolutionError) in
            asked.withLock { $0.append(name) }
            switch name {
            case "cam.example.org": return ["198.51.100.4", "203.0.113.7"]
            case "gone.example.org": throw NameResolutionError(name: name, code: EAI_NONAME, message: "Name or service not known")
            default: return [name]
            }
        })
        #expect(ice.forServer().publicAddresses == ["203.0.113.7", "198.51.100.4", "2001:db8::7"])
        #expect(ice.forServer().publicAddresses.count == 3 && asked.withLock { $0.count } == 8, "resolved again for each peer")
        // The real resolver: a numeric address is itself, with no lookup.
        #expect(try Sys.addresses(of: "203.0.113.7") == ["203.0.113.7"])
        #expect(try Sys.addresses(of: "2001:db8::7") == ["2001:db8::7"])
        #expect(try Sys.addresses(of: "localhost").contains("127.0.0.1"), "from /etc/hosts: no query leaves the machine")
    }

    @Test func aViewerGetsAMintedTURNCredentialAndNeverASecret() throws {
        let c = try parse("""
        {"webrtc": {"iceServers": [{"urls": "stun:stun.lan:3478"},
                                   {"urls": "turn:own.lan:3478", "username": "cam", "credential": "long-lived"}],
                    "turn": {"urls": ["turn:turn.lan:3478?transport=udp", "turns:turn.lan:5349"], "secret": "s3cret", "ttl": 86400}}}
        """)
        #expect(c.webrtc.turn?.ttl == 86400 && c.webrtc.turn?.urls.count == 2)
        #expect(try parse(#"{"webrtc": {"udpPorts": [50000, 50009]}}"#).webrtc.udpPorts == 50000...50009)
        #expect(ICEServers(try parse(#"{"webrtc": {"udpPorts": [50000, 50000]}}"#)).forServer().ports == 50000...50000)
        #expect(try Configuration.parse(Array(c.jsonText.utf8)) == c, "check-config prints what parses back")
        let ice = ICEServers(c, now: { 1_700_000_000.7 })
        // coturn's use-auth-secret: "expiry:name", base64(HMAC-SHA1(secret, username)) — Python's hmac gives the same.
        #expect(ICEServers.mint(c.webrtc.turn!, name: "alice", now: 1_700_000_000) == ("1700086400:alice", "HJX0XIkrCiQCuU88Z0oeXj+QW60="))

        let viewer = ice.forViewer("alice")
        #expect(viewer.map(\.urls) == [["stun:stun.lan:3478"], ["turn:turn.lan:3478?transport=udp", "turns:turn.lan:5349"]])
        #expect(viewer[0].username == nil && viewer[1].username == "1700086400:alice" && viewer[1].credential == "HJX0XIkrCiQCuU88Z0oeXj+QW60=")
        let links = ice.links(for: "alice").map(\.1)
        #expect(links.count == 3 && links[1] == #"<turn:turn.lan:3478?transport=udp>; rel="ice-server"; username="1700086400:alice"; credential="HJX0XIkrCiQCuU88Z0oeXj+QW60="; credential-type="password""#)
        let handed = links.joined() + String(decoding: try JSONEncoder().encode(ice.viewerJSON(for: "alice")), as: UTF8.self)
        #expect(!handed.contains("s3cret") && !handed.contains("long-lived") && !handed.contains("own.lan"),
                "the secret and the long-lived TURN password stay on the server")

        // The server's own peer: the long-lived one, and a credential of its own from the secret.
        let own = ice.forServer()
        #expect(own.turnServers == ["turn://cam:long%2Dlived@own.lan:3478",
                                    "turn://1700086400%3Aviewfinder:J0MeqVbvk7AyhDnAEn2%2FlEyCqCE%3D@turn.lan:3478?transport=udp",
                                    "turns://1700086400%3Aviewfinder:J0MeqVbvk7AyhDnAEn2%2FlEyCqCE%3D@turn.lan:5349"])
    }

    @Test func syntheticNoiseIsOnUnlessSaidOtherwise() throws {
        #expect(Configuration().synthetic.noise)
        let c = try parse(#"{"synthetic": {"noise": false}, "cameras": [{"id": "a", "source": "synthetic", "noise": true}]}"#)
        #expect(!c.synthetic.noise)
        guard case .list(let entries) = c.cameras else { Issue.record("a list"); return }
        #expect(entries[0].noise == true)
        #expect(try Configuration.parse(Array(c.jsonText.utf8)) == c)
        #expect { try parse(#"{"cameras": [{"id": "v", "source": "v4l2", "device": "/dev/video0", "noise": false}]}"#) } throws: {
            "\($0)".contains("cameras[0].noise: only a synthetic camera's sensor is simulated")
        }
    }
}
