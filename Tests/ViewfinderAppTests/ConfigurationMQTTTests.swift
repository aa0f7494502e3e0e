// config.json's `mqtt`: read, printed back by check-config (the password never: only its
// file), each bad value named by its key, and the client's options from it.

import Foundation
import MQTT
import Testing
@testable import ViewfinderApp

@Suite struct ConfigurationMQTTTests {
    func parse(_ text: String) throws -> Configuration { try Configuration.parse(Array(text.utf8)) }

    @Test func theSectionReadsAndPrintsBack() throws {
        let secret = NSTemporaryDirectory() + "vf-mqtt-secret-\(UUID().uuidString)"
        try "s3cret\nignored\n".write(toFile: secret, atomically: true, encoding: .utf8)
        defer { unlink(secret) }
        let c = try parse("""
        {"mqtt": {"url": "mqtts://broker.lan", "username": "cam", "passwordFile": "\(secret)", "node": "pi-4",
                  "topicPrefix": "vf", "role": "viewer", "discovery": false, "snapshotInterval": 30, "keepAlive": 20, "fleet": false}}
        """)
        #expect(c.mqtt.isEnabled && c.mqtt.node == "pi-4" && c.mqtt.role == .viewer && !c.mqtt.discovery && !c.mqtt.fleet)
        let endpoint = try #require(try c.mqtt.endpoint())
        #expect(endpoint.host == "broker.lan" && endpoint.port == 8883 && endpoint.tls)
        let options = try #require(try c.mqtt.options(will: MQTTMessage(topic: "vf/pi-4/status", text: "offline", retain: true)))
        #expect(options.password == "s3cret" && options.username == "cam" && options.tls != nil && options.keepAlive == 20)
        #expect(options.clientID == "viewfinder-pi-4" && options.will?.topic == "vf/pi-4/status")
        #expect(!c.jsonText.contains("s3cret"), "check-config never prints the password")
        #expect(try Configuration.parse(Array(c.jsonText.utf8)) == c, "check-config prints what parses back")
        #expect(try parse(#"{"mqtt": {"url": "mqtt://[::1]:1884"}}"#).mqtt.endpoint()?.port == 1884)
        #expect(try parse("{}").mqtt.isEnabled == false)
        #expect(Configuration.MQTTSettings.isSafeName(Configuration.MQTTSettings.defaultNode()))
    }

    @Test func badValuesNameTheirKey() throws {
        for (text, message) in [
            (#"{"mqtt": {"url": "http://broker"}}"#, "mqtt.url: expected mqtt://host"),
            (#"{"mqtt": {"url": "mqtt://user:pw@broker"}}"#, "mqtt.url"),
            (#"{"mqtt": {"url": "mqtt://broker:99999"}}"#, "mqtt.url: expected a port"),
            (#"{"mqtt": {"url": "mqtt://broker", "node": "a/b"}}"#, "mqtt.node: letters, digits"),
            (##"{"mqtt": {"url": "mqtt://broker", "topicPrefix": "#"}}"##, "mqtt.topicPrefix"),
            (#"{"mqtt": {"url": "mqtt://broker", "role": "admin"}}"#, "mqtt.role"),
            (#"{"mqtt": {"url": "mqtt://broker", "certificateFile": "c.pem"}}"#, "mqtt.certificateFile: a client certificate needs its keyFile"),
            (#"{"mqtt": {"url": "mqtt://broker", "keepAlive": 1}}"#, "mqtt.keepAlive"),
            (#"{"mqtt": {"url": "mqtt://broker", "password": "plain"}}"#, "mqtt.password"),
        ] {
            #expect { try parse(text) } throws: { "\($0)".contains(message) }
        }
        let missing = try parse(#"{"mqtt": {"url": "mqtt://broker", "passwordFile": "/nonexistent/pw"}}"#)
        #expect { _ = try missing.mqtt.options(will: MQTTMessage(topic: "t", text: "offline")) } throws: {
            "\($0)".contains("mqtt.passwordFile: cannot read /nonexistent/pw")
        }
    }
}
