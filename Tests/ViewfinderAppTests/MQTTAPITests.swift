// The server on a real broker (Debian's mosquitto on loopback): status, retained state and
// Home Assistant discovery out; commands in as the HTTP routes they name, answered on the
// MQTT 5 Response Topic with the HTTP status and body; bad commands answered and nothing
// changed; a broker that restarts gets everything again.

import Foundation
import JSON
import MQTT
import MQTTTestSupport
import Testing
@testable import ViewfinderApp

/// A probe that asks the server and waits for the answer with its correlation data.
struct Asker {
    let probe: Probe
    let base: String

    init(_ broker: Broker, node: String) throws {
        probe = try Probe(broker, id: "asker-\(UUID().uuidString.prefix(8))", subscribe: ["answers/#", "viewfinder/\(node)/#", "homeassistant/#"])
        base = "viewfinder/\(node)"
    }

    /// Publishes `body` on `<base>/<route>` until its answer is back (the server's
    /// subscription may not be in place on the first try); the status and the body.
    func ask(_ route: String, _ body: String) async throws -> (status: Int, body: JSONValue) {
        let correlation = Array(UUID().uuidString.utf8)
        var answer: MQTTMessage?
        for _ in 0..<20 where answer == nil {
            probe.client.publish(MQTTMessage(topic: "\(base)/\(route)", payload: Array(body.utf8), qos: 1,
                                             responseTopic: "answers/x", correlationData: correlation))
            _ = await eventually(timeout: 1) {
                answer = probe.messages(on: "answers/x").first { $0.correlationData == correlation }
                return answer != nil
            }
        }
        let m = try #require(answer, "no answer to \(route)")
        guard case .object(let o) = try JSONValue.parse(m.payload), case .number(let status) = o["status"], let b = o["body"] else {
            throw BrokerError(message: "not an answer: \(String(decoding: m.payload, as: UTF8.self))")
        }
        return (Int(status), b)
    }

    func json(_ topic: String) -> JSONValue? {
        probe.messages(on: topic).last.flatMap { try? JSONValue.parse($0.payload) }
    }
}

extension JSONValue {
    var number: Double? { if case .number(let n) = self { n } else { nil } }
    var string: String? { if case .string(let s) = self { s } else { nil } }
}

@Suite(.serialized) struct MQTTAPITests {
    func mqtt(_ broker: Broker, node: String, _ edit: @escaping (inout Configuration.MQTTSettings) -> Void = { _ in }) -> (inout Configuration) -> Void {
        { c in
            c.mqtt.url = broker.url
            c.mqtt.node = node
            c.mqtt.stateInterval = 0.05
            edit(&c.mqtt)
        }
    }

    @Test func statusStateDiscoveryAndCommandsAsTheHTTPAPI() async throws {
        let broker = try Broker()
        let asker = try Asker(broker, node: "n1")
        defer { asker.probe.client.stop() }
        try await withServer(mqtt(broker, node: "n1")) { app, port in
            #expect(await eventually { asker.probe.messages(on: "viewfinder/n1/status").last.map { String(decoding: $0.payload, as: UTF8.self) } == "online" })
            #expect(await eventually { asker.json("viewfinder/n1/rear/state")?["camera"]?["id"]?.string == "rear" })
            #expect(await eventually { asker.json("viewfinder/n1/front/state") != nil })

            // A command is its route: the same validation, the same session call, the same JSON.
            let zoom = try await asker.ask("rear/session/zoom", #"{"factor": 2}"#)
            #expect(zoom.status == 200 && zoom.body["zoom"]?["factor"]?.number == 2)
            let http = try await fetch(port, "/api/cameras/rear/session")
            #expect(((http.json as? [String: Any])?["zoom"] as? [String: Any])?["factor"] as? Double == 2)
            #expect(await eventually { asker.json("viewfinder/n1/rear/state")?["zoom"]?["factor"]?.number == 2 }, "the state follows")

            // Bad commands: an error answer, nothing changed, the client still there.
            let wrongType = try await asker.ask("rear/session/zoom", #"{"factor": "two"}"#)
            #expect(wrongType.status == 400 && wrongType.body["error"]?["code"]?.string != nil)
            let malformed = try await asker.ask("rear/session/zoom", "{")
            #expect(malformed.status == 400 && malformed.body["error"]?["code"]?.string == "invalid_json")
            let nan = try await asker.ask("rear/session/zoom", #"{"factor": NaN}"#)
            #expect(nan.status == 400)
            let unknownRoute = try await asker.ask("rear/session/warp", "{}")
            #expect(unknownRoute.status == 404)
            let unknownCamera = try await asker.ask("nocam/session/zoom", #"{"factor": 2}"#)
            #expect(unknownCamera.status == 404, "\(unknownCamera.body)")
            let huge = try await asker.ask("rear/session/zoom", "{\"factor\": 2, \"pad\": \"" + String(repeating: "x", count: 70_000) + "\"}")
            #expect(huge.status == 413)
            let after = try await asker.ask("rear/session/zoom", #"{"factor": 3}"#)
            #expect(after.status == 200 && after.body["zoom"]?["factor"]?.number == 3)

            // A photo: stored (its JSON answers), announced, and its JPEG on …/snapshot.
            let photo = try await asker.ask("rear/session/capture", "{}")
            #expect(photo.status == 201 && photo.body["id"]?.string != nil)
            #expect(await eventually { asker.probe.messages(on: "viewfinder/n1/rear/snapshot").last?.payload.prefix(2) == [0xFF, 0xD8] })
            #expect(await eventually { asker.json("viewfinder/n1/rear/event")?["type"]?.string == "photo" })

            // The recording switch (one route, Home Assistant's switch).
            let on = try await asker.ask("rear/session/recording", #"{"active": true}"#)
            #expect(on.status == 200 && on.body["recording"]?["active"] == .bool(true))
            let off = try await asker.ask("rear/session/recording", #"{"active": false}"#)
            #expect(off.status == 200 && off.body["recording"]?["active"] == .bool(false))
            #expect(app.mqtt.withLock { $0 }?.client.status == .connected)
        }
    }

    @Test func discoveryOffersWhatTheCameraCanDoAndRemovesWhatItNoLongerHas() async throws {
        let broker = try Broker()
        // A config left by an earlier run for a camera that is gone.
        let leftover = try Probe(broker, id: "leftover")
        leftover.client.publish(MQTTMessage(topic: "homeassistant/switch/viewfinder_n2/gone_torch/config", text: #"{"name": "old"}"#, qos: 1, retain: true))
        #expect(await waitUntil { leftover.client.counts.published == 1 })
        leftover.client.stop()
        let asker = try Asker(broker, node: "n2")
        defer { asker.probe.client.stop() }
        try await withServer(mqtt(broker, node: "n2")) { _, _ in
            let prefix = "homeassistant"
            #expect(await eventually { asker.json("\(prefix)/camera/viewfinder_n2/rear_camera/config") != nil })
            let camera = try #require(asker.json("\(prefix)/camera/viewfinder_n2/rear_camera/config"))
            #expect(camera["topic"]?.string == "viewfinder/n2/rear/snapshot")
            #expect(camera["availability_topic"]?.string == "viewfinder/n2/status")
            #expect(camera["device"]?["identifiers"] == .array([.string("viewfinder_n2_rear")]))
            #expect(camera["device"]?["configuration_url"]?.string?.hasPrefix("http://") == true)
            for (component, entity, key) in [("button", "capture", "command_topic"), ("switch", "torch", "command_topic"),
                                             ("number", "zoom", "command_topic"), ("select", "focus_mode", "options"),
                                             ("switch", "recording", "command_topic"), ("sensor", "fps", "state_topic"),
                                             ("binary_sensor", "motion", "state_topic")] {
                #expect(await eventually { asker.json("\(prefix)/\(component)/viewfinder_n2/rear_\(entity)/config")?[key] != nil },
                        "\(component) \(entity)")
            }
            // A mute camera (the test servers' synthetic cameras) offers no microphone entities.
            #expect(asker.json("\(prefix)/switch/viewfinder_n2/rear_mute/config") == nil)
            let zoom = try #require(asker.json("\(prefix)/number/viewfinder_n2/rear_zoom/config"))
            #expect(zoom["max"]?.number == 8 && zoom["command_topic"]?.string == "viewfinder/n2/rear/session/zoom")
            // The leftover is removed: an empty retained config.
            #expect(await eventually { asker.probe.messages(on: "\(prefix)/switch/viewfinder_n2/gone_torch/config").last?.payload.isEmpty == true })
        }
    }

    /// A camera with a microphone: a mute switch and a sound level sensor in discovery, the
    /// level on `<camera>/level` once a second (not the ten a second SSE clients get), and
    /// the mute over MQTT as over HTTP.
    @Test func theMicrophoneIsAMuteSwitchAndALevelSensor() async throws {
        let broker = try Broker()
        let asker = try Asker(broker, node: "n5")
        defer { asker.probe.client.stop() }
        try await withServer({ c in self.mqtt(broker, node: "n5")(&c); c.synthetic.microphone = true }) { _, _ in
            #expect(await eventually { asker.json("homeassistant/switch/viewfinder_n5/rear_mute/config") != nil })
            let mute = try #require(asker.json("homeassistant/switch/viewfinder_n5/rear_mute/config"))
            #expect(mute["command_topic"]?.string == "viewfinder/n5/rear/session/audio")
            // Each entity's config is a message of its own: the sensor's may come after the switch's.
            #expect(await eventually { asker.json("homeassistant/sensor/viewfinder_n5/rear_sound_level/config") != nil })
            let sensor = try #require(asker.json("homeassistant/sensor/viewfinder_n5/rear_sound_level/config"))
            #expect(sensor["state_topic"]?.string == "viewfinder/n5/rear/level" && sensor["unit_of_measurement"]?.string == "dBFS")
            #expect(await eventually { asker.probe.messages(on: "viewfinder/n5/rear/level").count >= 2 })
            #expect(asker.json("viewfinder/n5/rear/level")?["rmsDb"]?.number.map { $0 < 0 && $0 > -100 } == true)
            let muted = try await asker.ask("rear/session/audio", #"{"muted": true}"#)
            #expect(muted.status == 200 && muted.body["audio"]?["muted"] == .bool(true))
            #expect(await eventually { asker.json("viewfinder/n5/rear/state")?["audio"]?["muted"] == .bool(true) })
            // Once a second: in the time ten level events pass, at most two are published.
            let before = asker.probe.messages(on: "viewfinder/n5/rear/level").count
            let start = Date()
            _ = await eventually(timeout: 1.5) { false }
            let elapsed = Date().timeIntervalSince(start)
            let sent = asker.probe.messages(on: "viewfinder/n5/rear/level").count - before
            #expect(Double(sent) <= elapsed + 1, "\(sent) level messages in \(elapsed) s")
        }
    }

    @Test func aViewerRoleMayNotSteer() async throws {
        let broker = try Broker()
        let asker = try Asker(broker, node: "n3")
        defer { asker.probe.client.stop() }
        try await withServer(mqtt(broker, node: "n3") { $0.role = .viewer }) { _, _ in
            let zoom = try await asker.ask("rear/session/zoom", #"{"factor": 2}"#)
            #expect(zoom.status == 403 && zoom.body["error"]?["code"]?.string == "forbidden")
            #expect(asker.json("viewfinder/n3/rear/state")?["zoom"]?["factor"]?.number == 1)
        }
    }

    @Test func aBrokerRestartGetsStatusAndStateAgain() async throws {
        let broker = try Broker()
        try await withServer(mqtt(broker, node: "n4")) { app, _ in
            let client = try #require(app.mqtt.withLock { $0 }?.client)
            #expect(await eventually { client.connects == 1 })
            broker.stop()  // persistence off: it forgets every retained message
            try broker.start()
            #expect(await eventually(timeout: 5) { client.connects == 2 }, "reconnected within 5 s of the broker's return")
            let late = try Probe(broker, id: "late", subscribe: ["viewfinder/n4/#"])
            defer { late.client.stop() }
            #expect(await eventually { late.messages(on: "viewfinder/n4/status").last?.payload == Array("online".utf8) })
            #expect(await eventually { !late.messages(on: "viewfinder/n4/rear/state").isEmpty })
        }
    }
}
