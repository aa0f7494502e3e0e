// Push subscriptions (WS-BaseNotification's Subscribe) end to end on real parts: libcurl POSTs
// each Notify to a consumer that is a real HTTP server (libmicrohttpd, on port 0). The
// consumer sees the properties as they are, then each change; a consumer that refuses
// connections is reported once per run of failures while its subscription lives on; what is
// not an http(s) URL is refused before anything is sent.

import Foundation
import HTTPServer
@testable import ONVIF
import SOAP
import SystemSupport
import Testing
import TimeTestSupport

@Suite struct PushSubscriptionTests {
    /// A consumer: every POST it is sent, by path, with its content type.
    final class Consumer: Sendable {
        struct Delivery: Sendable { var path: String, contentType: String, body: [UInt8] }
        let received = Locked<[Delivery]>([])
        let server: HTTPServer

        init() throws {
            var router = Router()
            let received = received
            router.post("/hooks/:name") { request in
                received.withLock { $0.append(Delivery(path: request.path, contentType: request.header("content-type") ?? "", body: request.body)) }
                return Response(status: 200)
            }
            server = HTTPServer(configuration: ServerConfiguration(host: "127.0.0.1", port: 0), router: router)
            try server.start()
        }

        func url(_ name: String) -> String { "http://127.0.0.1:\(server.port)/hooks/\(name)" }

        /// The `n`th POST to `name` (from 1), waiting for it a bounded time.
        func delivery(_ n: Int, to name: String) async -> Delivery? {
            let deadline = TestTime.deadline(TestTime.patience)
            while Date() < deadline {
                let got = received.withLock { $0.filter { $0.path == "/hooks/\(name)" } }
                if got.count >= n { return got[n - 1] }
                try? await Task.sleep(nanoseconds: 10_000_000)
            }
            return nil
        }

        func count(_ name: String) -> Int { received.withLock { $0.filter { $0.path == "/hooks/\(name)" }.count } }
    }

    typealias Device = EventsServiceTests.Device

    /// The events service with push subscriptions delivered by `post` (libcurl by default), the
    /// broker's clock a second after the start, three subscriptions at most.
    static func device(post: @escaping NotificationPost = CurlPost.post(timeout: 5),
                       report: @escaping @Sendable (String, String?) -> Void = { _, _ in }) -> Device {
        let start = EventsServiceTests.start
        return Device(maxPullPoints: 3, push: PushDelivery(post: post, clock: { start + 1 }, report: report))
    }

    /// A Notify's messages, each as EventsServiceTests reads a pull's, and the subscription each names.
    static func notified(_ d: Consumer.Delivery) throws -> (messages: [(topic: String, source: String, value: String, operation: String)], references: [String]) {
        let request = try Envelope.read(d.body)
        #expect(request.operation.name == QName(ONVIFNamespace.notification, "Notify"))
        #expect(request.header.first { $0.name.local == "Action" }?.trimmedText == "http://docs.oasis-open.org/wsn/bw-2/NotificationConsumer/Notify")
        let references = request.operation.children("NotificationMessage").compactMap { $0["SubscriptionReference", "Address"]?.trimmedText }
        return (EventsServiceTests.messages(request.operation), references)
    }

    @Test func aConsumerIsSentThePropertiesThenEachChangeUntilItUnsubscribes() async throws {
        let consumer = try Consumer()
        defer { consumer.server.stop() }
        let d = Self.device()
        let (status, made) = try await d.subscribe(consumer.url("ha"))
        #expect(status == 200)
        let address = try #require(made["SubscriptionReference", "Address"]?.trimmedText)
        #expect(address == "http://192.168.1.20:8080/onvif/subscriptions/1")
        #expect(made["TerminationTime"]?.trimmedText == "2026-11-29T05:50:00Z")

        let first = try #require(await consumer.delivery(1, to: "ha"), "the first Notify: the properties as they are")
        #expect(first.contentType.hasPrefix("application/soap+xml"))
        let (initial, references) = try Self.notified(first)
        #expect(initial.count == 4 && initial.allSatisfy { $0.value == "false" && $0.operation == "Initialized" })
        #expect(references == Array(repeating: address, count: 4), "each message names its subscription")

        d.broker.motion(source: "rear", moving: true, at: EventsServiceTests.start + 2)
        var changed = try Self.notified(try #require(await consumer.delivery(2, to: "ha"))).messages
        if changed.count < 2, let third = await consumer.delivery(3, to: "ha") { changed += try Self.notified(third).messages }
        #expect(changed.map(\.source) == ["rear", "rear"] && changed.allSatisfy { $0.value == "true" && $0.operation == "Changed" })

        // A pull at a push subscription's address is refused: its messages are the consumer's.
        let (pulled, fault) = try await d.call("<tev:PullMessages><tev:Timeout>PT1S</tev:Timeout><tev:MessageLimit>1</tev:MessageLimit></tev:PullMessages>",
                                               subscription: 1)
        #expect(pulled == 400 && SignedCaller.subcode(fault) == "ActionNotSupported")

        // SetSynchronizationPoint: the properties again, pushed.
        let before = consumer.count("ha")
        #expect(try await d.call("<tev:SetSynchronizationPoint/>", subscription: 1).0 == 200)
        let again = try Self.notified(try #require(await consumer.delivery(before + 1, to: "ha"))).messages
        #expect(again.allSatisfy { $0.operation == "Initialized" } && again.contains { $0.source == "rear" && $0.value == "true" })

        // Unsubscribed, nothing more is queued for it: a change goes only to a subscription made after.
        #expect(try await d.call("<wsnt:Unsubscribe/>", subscription: 1).0 == 200)
        let sent = consumer.count("ha")
        d.broker.motion(source: "rear", moving: false, at: EventsServiceTests.start + 3)
        #expect(try await d.subscribe(consumer.url("later")).0 == 200)
        let later = try Self.notified(try #require(await consumer.delivery(1, to: "later"))).messages
        #expect(later.contains { $0.source == "rear" && $0.value == "false" })
        #expect(consumer.count("ha") == sent, "no Notify after Unsubscribe")
        #expect(d.broker.pullPointCount(now: EventsServiceTests.start + 4) == 1)
        d.broker.close()
        #expect(d.broker.pullPointCount(now: EventsServiceTests.start + 4) == 0)
    }

    @Test func aConsumerThatRefusesIsReportedOnceAndItsSubscriptionLivesOn() async throws {
        // A port nothing listens on: bound (so nothing else takes it) but not listening.
        let (socket, closed) = try Self.boundPort()
        defer { close(socket) }
        let attempts = Locked<[PostOutcome]>([]), reports = Locked<[String?]>([])
        let real = CurlPost.post(timeout: 5)
        let d = Self.device(post: { address, body in
            let outcome = await real(address, body)
            attempts.withLock { $0.append(outcome) }
            return outcome
        }, report: { _, failure in reports.withLock { $0.append(failure) } })
        #expect(try await d.subscribe("http://127.0.0.1:\(closed)/hook").0 == 200)
        let deadline = TestTime.deadline(TestTime.patience)
        func attempted(_ n: Int) async {
            while attempts.withLock({ $0.count }) < n, Date() < deadline { try? await Task.sleep(nanoseconds: 10_000_000) }
        }
        await attempted(1)  // the properties (else the change would go in the same POST)
        d.broker.motion(source: "front", moving: true, at: EventsServiceTests.start + 2)
        await attempted(2)
        let outcomes = attempts.withLock { $0 }
        #expect(outcomes.count >= 2, "the properties, then the change: both attempted")
        for case .failed(let why) in outcomes { #expect(why.contains("127.0.0.1:\(closed)") && why.contains("libcurl 7"), "\(why)") }
        #expect(outcomes.allSatisfy { if case .failed = $0 { true } else { false } })
        let said = reports.withLock { $0 }
        #expect(said.count == 1 && said[0] != nil, "one report for the run of failures: \(said)")
        #expect(try await d.call("<wsnt:Renew><wsnt:TerminationTime>PT60S</wsnt:TerminationTime></wsnt:Renew>", subscription: 1).0 == 200,
                "the subscription lives on")
        d.broker.close()
    }

    /// A TCP socket bound to a free loopback port without listening: a connection to it is refused.
    static func boundPort() throws -> (Int32, Int) {
        let fd = try Sys.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0, "TCP")
        do {
            try IPv4SocketAddress.loopback(port: 0).bind(fd)
            return (fd, Int(try IPv4SocketAddress.local(of: fd).port))
        } catch {
            close(fd)
            throw error
        }
    }

    @Test func whatIsNotAnHTTPURLWithAHostIsRefusedAndNothingIsMade() async throws {
        let posts = Locked(0)
        let d = Self.device(post: { _, _ in posts.withLock { $0 += 1 }; return .answered(status: 200) })
        for bad in ["", "file:///etc/passwd", "gopher://127.0.0.1:70/", "http://", "http:///path", "https://user:secret@example.org/hook",
                    "http://host/a b", "http://" + String(repeating: "h", count: 2_100)] {
            let (status, fault) = try await d.subscribe(bad)
            #expect(status == 400 && SignedCaller.subcode(fault) == "SubscribeCreationFailedFault", "\(bad.prefix(40))")
        }
        let (missing, fault) = try await d.call("<wsnt:Subscribe><wsnt:InitialTerminationTime>PT60S</wsnt:InitialTerminationTime></wsnt:Subscribe>")
        #expect(missing == 400 && SignedCaller.subcode(fault) == "SubscribeCreationFailedFault")
        #expect(d.broker.pullPointCount(now: EventsServiceTests.start) == 0 && posts.withLock { $0 } == 0)

        // The limit is shared with pull points: three in all here.
        for n in 1...3 { #expect(try await d.subscribe("http://192.0.2.1/\(n)").0 == 200) }
        let (full, fault2) = try await d.subscribe("http://192.0.2.1/4")
        #expect(full == 500 && SignedCaller.subcode(fault2) == "SubscribeCreationFailedFault")
        d.broker.close()
    }

    @Test func withoutADeliverySubscribeIsNotOffered() async throws {
        let caller = SignedCaller(TwoCameras(), ["wsnt": ONVIFNamespace.notification, "wsa": ONVIFNamespace.addressing,
                                                "tev": ONVIFNamespace.events])
        let (status, fault) = try await caller.call("<wsnt:Subscribe><wsnt:ConsumerReference><wsa:Address>http://h/</wsa:Address></wsnt:ConsumerReference></wsnt:Subscribe>")
        #expect(status == 400 && SignedCaller.subcode(fault) == "ActionNotSupported")
        let (_, caps) = try await caller.call("<tev:GetServiceCapabilities/>")
        #expect(caps["Capabilities"]?.attribute("MaxNotificationProducers") == "0")
        let d = Self.device(post: { _, _ in .answered(status: 200) })
        let (_, offered) = try await d.call("<tev:GetServiceCapabilities/>")
        #expect(offered["Capabilities"]?.attribute("MaxNotificationProducers") == "3")
    }
}

extension EventsServiceTests.Device {
    func subscribe(_ consumer: String) async throws -> (Int, XMLElement) {
        try await call("<wsnt:Subscribe><wsnt:ConsumerReference><wsa:Address>\(consumer)</wsa:Address></wsnt:ConsumerReference>"
                       + "<wsnt:InitialTerminationTime>PT600S</wsnt:InitialTerminationTime></wsnt:Subscribe>")
    }
}
