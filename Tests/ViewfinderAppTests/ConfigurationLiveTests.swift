// config.json's live sections: `live.maxClients`, `rtsp` and `webrtc.iceServers` read, each
// bad value named by its key, and the ICE servers handed to webrtcbin in its URL forms.

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
        let ice = Application.ice(c)
        #expect(ice.stunServer == "stun://stun.example.net:3478")
        #expect(ice.turnServers == ["turn://u%40x:p%3Aw@turn.example.net:3478"])
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
        ] {
            #expect { try parse(text) } throws: { "\($0)".contains(message) }
        }
        // RTSP switched off: its port may be anything.
        #expect(try parse(#"{"rtsp": {"enabled": false, "port": 8080}}"#).rtsp.enabled == false)
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
