// A client of the test's broker that keeps what reaches it, for a test to wait on.

import Foundation
import Glibc
import Logging
import MQTT
import SystemSupport

/// A client and what reached it, for a test to wait on.
public final class Probe: @unchecked Sendable {  // `got` is guarded by its lock
    public let got = Locked([MQTTMessage]())
    public var client: MQTTClient!
    public let broker: Broker  // alive while its clients are

    public init(_ broker: Broker, id: String, user: String? = nil, password: String? = nil, tls: MQTTOptions.TLS? = nil,
         subscribe: [String] = []) throws {
        self.broker = broker
        var logger = Logger(label: "mqtt-test")
        logger.logLevel = .critical
        let options = MQTTOptions(host: "127.0.0.1", port: broker.port, tls: tls, username: user, password: password, clientID: id, keepAlive: 5)
        client = try MQTTClient(options: options, logger: logger, handlers: .init(connected: {}, message: { [got] m in got.withLock { $0.append(m) } }))
        for s in subscribe { client.subscribe(s) }
        client.start()
    }

    public func messages(on topic: String) -> [MQTTMessage] { got.withLock { $0.filter { $0.topic == topic } } }
}

/// Polls `condition` until it holds or `seconds` (stretched under sanitizers) pass: for what
/// arrives over a socket, which a test cannot await directly. It suspends between polls,
/// never blocks a thread of the cooperative pool (two on two cores: a blocked one starves
/// every other suite's servers).
public func waitUntil(_ seconds: Double = 10, _ condition: () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds * BrokerTestTime.scale)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return await condition()
}

public enum BrokerTestTime {
    public static let scale = Double(ProcessInfo.processInfo.environment["VIEWFINDER_TEST_TIME_SCALE"] ?? "") ?? 1
}

