// The last will, as a host dies: `viewfinder` run as users run it, killed with SIGKILL —
// no goodbye — and the broker tells the others (`offline`, retained) the moment the socket
// closes; a clean stop says `offline` itself.

import Foundation
import Glibc
import MQTT
import MQTTTestSupport
import Testing

@Suite(.serialized) struct MQTTProcessTests {
    func config(_ broker: Broker, node: String) throws -> String {
        let path = NSTemporaryDirectory() + "vf-mqtt-\(UUID().uuidString).json"
        try "{\"mqtt\": {\"url\": \"\(broker.url)\", \"node\": \"\(node)\", \"discovery\": false}}".write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func status(_ probe: Probe, _ node: String) -> String? {
        probe.messages(on: "viewfinder/\(node)/status").last.map { String(decoding: $0.payload, as: UTF8.self) }
    }

    @Test func aKilledHostGoesOfflineAtOnceAndACleanStopSaysSo() async throws {
        let broker = try Broker()
        let probe = try Probe(broker, id: "will-watcher", subscribe: ["viewfinder/+/status"])
        defer { probe.client.stop() }
        let killed = try config(broker, node: "doomed")
        defer { unlink(killed) }
        let (p, _, _) = try await ProcessTests().launch(["--config", killed])
        #expect(await waitUntil { status(probe, "doomed") == "online" })
        let before = Date()
        kill(p.processIdentifier, SIGKILL)
        #expect(await waitUntil(5) { status(probe, "doomed") == "offline" })
        #expect(Date().timeIntervalSince(before) < 3 * BrokerTestTime.scale, "the will is published when the socket closes")
        // A late subscriber sees it too: retained.
        let late = try Probe(broker, id: "late", subscribe: ["viewfinder/doomed/status"])
        defer { late.client.stop() }
        #expect(await waitUntil { late.messages(on: "viewfinder/doomed/status").last?.payload == Array("offline".utf8) })

        let stopped = try config(broker, node: "polite")
        defer { unlink(stopped) }
        let (q, _, _) = try await ProcessTests().launch(["--config", stopped])
        #expect(await waitUntil { status(probe, "polite") == "online" })
        q.interrupt()  // SIGINT: a clean stop
        #expect(await ProcessTests().waitForExit(q, timeout: 15))
        #expect(q.terminationStatus == 0, "a clean exit: the offline came from the host, not from its will")
        #expect(await waitUntil(2) { status(probe, "polite") == "offline" })
    }
}
