// The last will, as a host dies: `viewfinder` run as users run it, killed with SIGKILL —
// no goodbye — and the broker tells the others (`offline`, retained) the moment the socket
// closes; a clean stop says `offline` itself.

import CaptureTestSupport
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
        // The broker publishes a will either when the socket closes or when the keep-alive
        // (10 s) has gone unanswered for 1.5 times over — 15 s. Anything under the keep-alive
        // itself can only be the closed socket, however slow the machine (a CI run took 3.1 s).
        #expect(await waitUntil(9) { status(probe, "doomed") == "offline" })
        #expect(Date().timeIntervalSince(before) < 10, "the will is published when the socket closes, not at the keep-alive's expiry")
        // A late subscriber sees it too: retained.
        let late = try Probe(broker, id: "late", subscribe: ["viewfinder/doomed/status"])
        defer { late.client.stop() }
        #expect(await waitUntil { late.messages(on: "viewfinder/doomed/status").last?.payload == Array("offline".utf8) })

        let stopped = try config(broker, node: "polite")
        defer { unlink(stopped) }
        let (q, _, _) = try await ProcessTests().launch(["--config", stopped])
        #expect(await waitUntil { status(probe, "polite") == "online" })
        q.interrupt()  // SIGINT: a clean stop
        try #require(await waitForExit(q, timeout: ProcessTests.stopTimeout))
        #expect(q.terminationStatus == 0, "a clean exit: the offline came from the host, not from its will")
        #expect(await waitUntil { status(probe, "polite") == "offline" })
    }
}
