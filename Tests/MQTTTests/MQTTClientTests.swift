// The client against Debian's mosquitto on loopback: messages both ways with MQTT 5's
// request/response properties, a broker that goes away and comes back, a refused login,
// TLS with a client certificate, and a socket numbered above select()'s 1024.

import Foundation
import Glibc
import Logging
import MQTT
import MQTTTestSupport
import SystemSupport
import Testing

@Suite(.serialized) struct MQTTClientTests {
    @Test func requestAndAnswerCarryResponseTopicAndCorrelationData() async throws {
        let broker = try Broker()
        let asker = try Probe(broker, id: "asker", subscribe: ["answers/#"])
        let answerer = try Probe(broker, id: "answerer", subscribe: ["questions/#"])
        defer { asker.client.stop(); answerer.client.stop() }
        #expect(await waitUntil { asker.client.status == .connected && answerer.client.status == .connected })
        // Asked until the answerer's subscription is in place (its SUBACK is not awaited).
        #expect(await waitUntil {
            asker.client.publish(MQTTMessage(topic: "questions/zoom", payload: Array(#"{"factor": 2}"#.utf8), qos: 1,
                                             responseTopic: "answers/1", correlationData: [0, 1, 2, 255]))
            return await waitUntil(0.5) { !answerer.messages(on: "questions/zoom").isEmpty }
        })
        let question = try #require(answerer.messages(on: "questions/zoom").first)
        #expect(question.responseTopic == "answers/1" && question.correlationData == [0, 1, 2, 255])
        #expect(String(decoding: question.payload, as: UTF8.self) == #"{"factor": 2}"#)
        answerer.client.publish(MQTTMessage(topic: question.responseTopic!, payload: Array("done".utf8), qos: 1,
                                            correlationData: question.correlationData, contentType: "application/json"))
        #expect(await waitUntil { asker.messages(on: "answers/1").first?.correlationData == [0, 1, 2, 255] })
    }

    @Test func aBrokerThatComesBackIsRejoinedWithItsSubscriptions() async throws {
        let broker = try Broker()
        let watcher = try Probe(broker, id: "watcher", subscribe: ["news/#"])
        let sender = try Probe(broker, id: "sender")
        defer { watcher.client.stop(); sender.client.stop() }
        #expect(await waitUntil { watcher.client.connects == 1 && sender.client.connects == 1 })
        for round in 1...3 {
            broker.stop()
            #expect(await waitUntil { watcher.client.status != .connected })
            let back = Date()
            try broker.start()
            #expect(await waitUntil { watcher.client.connects == round + 1 && sender.client.connects == round + 1 })
            #expect(Date().timeIntervalSince(back) < 5 * BrokerTestTime.scale, "reconnected within 5 s of the broker's return")
            // The clean session lost the subscription; the client made it again.
            #expect(await waitUntil {
                sender.client.publish(MQTTMessage(topic: "news/\(round)", text: "r\(round)", qos: 1))
                return await waitUntil(0.5) { !watcher.messages(on: "news/\(round)").isEmpty }
            })
        }
    }

    @Test func aRefusedLoginIsReportedAndRetried() async throws {
        let broker = try Broker(users: ["camera": "right"])
        let wrong = try Probe(broker, id: "wrong", user: "camera", password: "wrong")
        let right = try Probe(broker, id: "right", user: "camera", password: "right")
        defer { wrong.client.stop(); right.client.stop() }
        #expect(await waitUntil { right.client.status == .connected })
        #expect(await waitUntil {
            if case .disconnected(let why) = wrong.client.status { return why.contains("refused") }
            return false
        }, "\(wrong.client.status)")
        #expect(wrong.client.connects == 0)
    }

    @Test func tlsWithAClientCertificate() async throws {
        let broker = try Broker(tls: true)
        let good = try Probe(broker, id: "tls", tls: .init(caFile: broker.caFile, certificateFile: broker.clientCertificate, keyFile: broker.clientKey),
                             subscribe: ["t/#"])
        let noCertificate = try Probe(broker, id: "nocert", tls: .init(caFile: broker.caFile))
        defer { good.client.stop(); noCertificate.client.stop() }
        #expect(await waitUntil { good.client.status == .connected }, "\(good.client.status)")
        good.client.publish(MQTTMessage(topic: "t/echo", text: "over TLS", qos: 1))
        let other = try Probe(broker, id: "tls2", tls: .init(caFile: broker.caFile, certificateFile: broker.clientCertificate, keyFile: broker.clientKey))
        defer { other.client.stop() }
        #expect(await waitUntil { other.client.status == .connected })
        other.client.publish(MQTTMessage(topic: "t/other", text: "hello", qos: 1))
        #expect(await waitUntil { !good.messages(on: "t/other").isEmpty })
        #expect(noCertificate.client.connects == 0)
    }
}

/// A broker the network swallows: a listener whose accept queue is full drops every SYN,
/// as a cut link does (no RST, no answer). The client gives the connect up after
/// `connectTimeout`, says so, and reaches the broker that then answers on that port.
@Suite(.serialized) struct MQTTSwallowedConnectTests {
    @Test func aConnectWithNoAnswerIsGivenUpAndMadeAgain() async throws {
        let port = Broker.freePort()
        let hole = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(hole, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let address = IPv4SocketAddress.loopback(port: UInt16(port))
        try address.bind(hole)
        try #require(listen(hole, 0) == 0)
        // Fill the accept queue (never accepted): later connections hang, unanswered. A keep-alive
        // of a minute: libmosquitto's own keep-alive check would end the wait after 1.5 × that.
        var fillers: [Int32] = []
        for _ in 0..<3 {
            let f = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            try? address.connect(f)  // EINPROGRESS: queued, never accepted
            fillers.append(f)
        }
        var logger = Logger(label: "mqtt-test")
        logger.logLevel = .critical
        let client = try MQTTClient(options: MQTTOptions(host: "127.0.0.1", port: port, clientID: "swallowed", keepAlive: 60),
                                    logger: logger, handlers: .init(connected: {}, message: { _ in }))
        client.start()
        defer { client.stop() }
        #expect(await waitUntil(MQTTClient.connectTimeout + 5) {
            if case .disconnected(let why) = client.status { return why.contains("no answer") }
            return false
        }, "\(client.status)")
        close(hole)
        for f in fillers { close(f) }
        let broker = try Broker(port: port)
        #expect(await waitUntil(MQTTClient.connectTimeout + 5) { client.status == .connected }, "\(client.status)")
        withExtendedLifetime(broker) {}
    }
}

/// Run on its own (make test): it holds 1,100 descriptors, which no other suite should see.
@Suite(.serialized) struct MQTTHighDescriptorTests {
    /// select() cannot watch a socket numbered 1024 or more; poll() can.
    @Test func aSocketAboveSelectsLimit() async throws {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        try #require(limit.rlim_max >= 1300)
        var raised = limit
        raised.rlim_cur = max(limit.rlim_cur, 1300)
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised)
        var held: [Int32] = []
        while let last = held.last.map({ $0 }) ?? Optional(0), last < 1100 {
            let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { break }
            held.append(fd)
        }
        defer { for fd in held { close(fd) } }
        let broker = try Broker()
        let high = try Probe(broker, id: "high", subscribe: ["h/#"])
        let sender = try Probe(broker, id: "sender-h")
        defer { high.client.stop(); sender.client.stop() }
        #expect(await waitUntil { high.client.status == .connected && sender.client.status == .connected })
        #expect(await waitUntil {
            sender.client.publish(MQTTMessage(topic: "h/1", text: "up high", qos: 1))
            return await waitUntil(0.5) { !high.messages(on: "h/1").isEmpty }
        })
    }
}
