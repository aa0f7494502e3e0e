// Every command a camera takes, over MQTT and over HTTP, on the same server: the same status
// and the same JSON (a state is compared without its moving parts: frame counters, clocks).
// And the broker over TLS with a client certificate, from config.json's `mqtt` alone.

import Foundation
import JSON
import MQTT
import MQTTTestSupport
import Testing
@testable import ViewfinderApp

@Suite(.serialized) struct MQTTRoutesTests {
    /// The answer's JSON without what changes between two identical calls.
    static func steady(_ v: JSONValue?) -> JSONValue? {
        guard case .object(var o)? = v else { return v }
        for k in ["frames", "stream", "recording", "motion", "exposure", "metadata", "outputs", "id", "url", "bytes", "capturedAt", "timestamp"] {
            o[k] = nil
        }
        // The microphone's level moves between two calls.
        if case .object(var a)? = o["audio"] { a["peakDb"] = nil; a["rmsDb"] = nil; o["audio"] = .object(a) }
        // Continuous autofocus moves the lens between two calls.
        if case .object(var f)? = o["focus"], f["mode"] == .string("continuous") { f["lensPosition"] = nil; o["focus"] = .object(f) }
        return .object(o)
    }

    @Test func everyCameraCommandAnswersAsItsHTTPRoute() async throws {
        let broker = try Broker()
        let asker = try Asker(broker, node: "r1")
        defer { asker.probe.client.stop() }
        try await withServer({ c in c.mqtt.url = broker.url; c.mqtt.node = "r1"; c.mqtt.discovery = false }) { _, port in
            // (route, body): each valid, then one the route refuses.
            let calls: [(String, String)] = [
                ("session/zoom", #"{"factor": 2}"#), ("session/zoom", #"{"factor": 99}"#),
                ("session/focus", #"{"mode": "locked", "lensPosition": 0.4}"#), ("session/focus", #"{"mode": "sideways"}"#),
                ("session/exposure", #"{"bias": 0.5}"#), ("session/exposure", #"{"iso": "high"}"#),
                ("session/white-balance", #"{"mode": "locked", "temperature": 4000}"#), ("session/white-balance", #"{"temperature": 1}"#),
                ("session/torch", #"{"mode": "on", "level": 0.5}"#), ("session/torch", #"{"mode": "blinding"}"#),
                ("session/orientation", #"{"rotation": 90, "mirrored": true}"#), ("session/orientation", #"{"rotation": 45}"#),
                ("session/metadata", #"{"types": ["qr"]}"#), ("session/metadata", #"{"types": ["hologram"]}"#),
                ("session/motion", #"{"threshold": 2}"#), ("session/motion", #"{"threshold": -1}"#),
                ("session/controls", #"{"brightness": 10}"#), ("session/controls", #"{"no_such_control": 1}"#),
                ("session/prepare", #"{"preset": "320x240"}"#), ("session/prepare", #"{"preset": "1x1"}"#),
                ("scene", #"{"moving": false}"#), ("scene", #"{"walker": 3}"#),
                ("session/recording/frame", "{}"),
                ("session/stop", "{}"), ("session/start", "{}"), ("session/start", #"{"surprise": 1}"#),
            ]
            for (route, body) in calls {
                let mqtt = try await asker.ask("rear/\(route)", body)
                let http = try await fetch(port, "POST", "/api/cameras/rear/\(route)", body: body)
                #expect(mqtt.status == http.status, "\(route) \(body): MQTT \(mqtt.status), HTTP \(http.status)")
                let httpJSON = try? JSONValue.parse(http.body)
                if mqtt.status >= 400 {
                    #expect(mqtt.body["error"]?["code"] == httpJSON?["error"]?["code"], "\(route) \(body): the same error")
                } else {
                    #expect(Self.steady(mqtt.body) == Self.steady(httpJSON), "\(route) \(body): the same answer")
                }
            }
            // The recording pair, each once (a second start or stop is a conflict, as over HTTP).
            let start = try await asker.ask("rear/session/recording/start", "{}")
            #expect(start.status == 200)
            #expect(try await fetch(port, "POST", "/api/cameras/rear/session/recording/start", body: "{}").status == 409)
            let stop = try await asker.ask("rear/session/recording/stop", "{}")
            #expect(stop.status == 201 && stop.body["id"]?.string != nil)
            #expect(try await fetch(port, "POST", "/api/cameras/rear/session/recording/stop", body: "{}").status == 409)
        }
    }

    @Test func theBrokerOverTLSWithAClientCertificate() async throws {
        let broker = try Broker(tls: true)
        let probe = try Probe(broker, id: "tls-watch", tls: .init(caFile: broker.caFile, certificateFile: broker.clientCertificate,
                                                                 keyFile: broker.clientKey), subscribe: ["viewfinder/t1/#"])
        defer { probe.client.stop() }
        try await withServer({ c in
            c.mqtt.url = "mqtts://127.0.0.1:\(broker.port)"
            c.mqtt.caFile = broker.caFile
            c.mqtt.certificateFile = broker.clientCertificate
            c.mqtt.keyFile = broker.clientKey
            c.mqtt.node = "t1"
        }) { app, _ in
            #expect(await waitUntil { probe.messages(on: "viewfinder/t1/status").last?.payload == Array("online".utf8) })
            #expect(app.mqtt.withLock { $0 }?.client.options.tls != nil)
        }
    }
}
