// The events service as a client sees it, through envelope bytes: a pull point made, its
// first messages each camera's motion as it is (Initialized), a change while a pull waits,
// terms that end and are renewed, filters, and the limits. The broker's clock is the
// requests' `now`, which each test sets.

@testable import ONVIF
import SOAP
import Testing

@Suite struct EventsServiceTests {
    static let start = 1_795_930_800.0

    struct Device {
        let broker: EventBroker
        let server: ONVIFServer

        /// `push`: how push subscriptions deliver (PushSubscriptionTests); none by default.
        init(maxPullPoints: Int = 16, push: PushDelivery? = nil) {
            broker = EventBroker(maxPullPoints: maxPullPoints)
            broker.declare(sources: ["rear", "front"], now: EventsServiceTests.start)
            server = ONVIFServer(device: TwoCameras(), events: broker, push: push) { _, _ in .granted(.read) }
        }

        /// Calls `body` (in tev: and wsnt:) at `at` seconds after the start, at the pull
        /// point `subscription` when given; the answer's status and body element.
        func call(_ body: String, at: Double = 0, subscription: Int? = nil) async throws -> (Int, XMLElement) {
            let xml = """
                <s:Envelope xmlns:s="\(SOAPNamespace.envelope)" xmlns:tev="\(ONVIFNamespace.events)" xmlns:wsnt="\(ONVIFNamespace.notification)" \
                xmlns:wsa="\(ONVIFNamespace.addressing)">\
                <s:Header><Security xmlns="\(ONVIFNamespace.security)"><UsernameToken><Username>u</Username><Password>p</Password></UsernameToken></Security></s:Header>\
                <s:Body>\(body)</s:Body></s:Envelope>
                """
            let context = ONVIFContext(host: "192.168.1.20:8080", secure: false, remoteAddress: "192.168.1.9",
                                       now: EventsServiceTests.start + at, subscription: subscription)
            let answer = await server.handle(Array(xml.utf8), context: context)
            return (answer.status, try Envelope.read(answer.body).operation)
        }

        func create(_ inner: String = "<tev:InitialTerminationTime>PT600S</tev:InitialTerminationTime>", at: Double = 0) async throws -> Int? {
            let (_, r) = try await call("<tev:CreatePullPointSubscription>\(inner)</tev:CreatePullPointSubscription>", at: at)
            return r["SubscriptionReference", "Address"].flatMap { Int($0.trimmedText.split(separator: "/").last ?? "") }
        }

        func pull(_ id: Int, timeout: String = "PT0.2S", limit: Int = 100, at: Double = 0) async throws -> (Int, XMLElement) {
            try await call("<tev:PullMessages><tev:Timeout>\(timeout)</tev:Timeout><tev:MessageLimit>\(limit)</tev:MessageLimit></tev:PullMessages>",
                           at: at, subscription: id)
        }
    }

    /// A notification as (topic, source, data value, operation).
    static func messages(_ r: XMLElement) -> [(topic: String, source: String, value: String, operation: String)] {
        r.children("NotificationMessage").compactMap { n in
            guard let m = n["Message", "Message"] else { return nil }
            return (n.child("Topic")?.trimmedText ?? "", m["Source"]?.children.first?.attribute("Value") ?? "",
                    m["Data", "SimpleItem"]?.attribute("Value") ?? "", m.attribute("PropertyOperation") ?? "")
        }
    }

    static func subcodes(_ fault: XMLElement) -> [String] {
        var out: [String] = [], code = fault["Code", "Subcode"]
        while let c = code { out.append(String(c.child("Value")?.trimmedText.split(separator: ":").last ?? "")); code = c.child("Subcode") }
        return out
    }

    @Test func aPullPointStartsWithEachCamerasMotionAsItIs() async throws {
        let d = Device()
        let (status, made) = try await d.call("<tev:CreatePullPointSubscription><tev:InitialTerminationTime>PT600S</tev:InitialTerminationTime></tev:CreatePullPointSubscription>")
        #expect(status == 200)
        #expect(made["SubscriptionReference", "Address"]?.trimmedText == "http://192.168.1.20:8080/onvif/subscriptions/1")
        #expect(made["CurrentTime"]?.trimmedText == "2026-11-29T05:40:00Z" && made["TerminationTime"]?.trimmedText == "2026-11-29T05:50:00Z")
        let (_, pulled) = try await d.pull(1)
        let m = Self.messages(pulled)
        #expect(m.count == 4, "two cameras, two topics each")
        #expect(m.allSatisfy { $0.value == "false" && $0.operation == "Initialized" })
        #expect(Set(m.map(\.topic)) == ["tns1:RuleEngine/CellMotionDetector/Motion", "tns1:VideoSource/MotionAlarm"])
        #expect(Set(m.map(\.source)) == ["rear", "front"])
        #expect(pulled["TerminationTime"]?.trimmedText == "2026-11-29T05:50:00Z")
        // Nothing more until something changes: the pull answers empty at its timeout.
        #expect(Self.messages(try await d.pull(1).1).isEmpty)
        // SetSynchronizationPoint: every property's value again.
        #expect(try await d.call("<tev:SetSynchronizationPoint/>", subscription: 1).0 == 200)
        #expect(Self.messages(try await d.pull(1).1).count == 4)
    }

    @Test func aWaitingPullGetsTheChangeAndTheSameValueIsNoChange() async throws {
        let d = Device()
        let id = try #require(try await d.create())
        _ = try await d.pull(id)  // the Initialized ones
        async let waiting = d.pull(id, timeout: "PT30S")
        d.broker.motion(source: "rear", moving: true, at: Self.start + 1.25)
        d.broker.motion(source: "rear", moving: true, at: Self.start + 1.5)
        let (status, pulled) = try await waiting
        var m = Self.messages(pulled)
        if m.count < 2 { m += Self.messages(try await d.pull(id).1) }  // the pull may have answered between the two topics
        #expect(status == 200)
        #expect(m.map(\.source) == ["rear", "rear"] && m.allSatisfy { $0.value == "true" && $0.operation == "Changed" })
        #expect(pulled["NotificationMessage", "Message", "Message"]?.attribute("UtcTime") == "2026-11-29T05:40:01.250Z")
        #expect(Self.messages(try await d.pull(id).1).isEmpty, "moving again while moving is not a change")
        d.broker.motion(source: "rear", moving: false, at: Self.start + 3)
        #expect(Self.messages(try await d.pull(id, limit: 1).1).map(\.value) == ["false"], "MessageLimit holds")
        #expect(Self.messages(try await d.pull(id, limit: 1).1).map(\.value) == ["false"])
    }

    @Test func aTermEndsUnlessRenewedAndUnsubscribeEndsItNow() async throws {
        let d = Device()
        let a = try #require(try await d.create("<tev:InitialTerminationTime>PT60S</tev:InitialTerminationTime>"))
        let b = try #require(try await d.create("<tev:InitialTerminationTime>2026-11-29T05:41:00Z</tev:InitialTerminationTime>"))
        let (status, renewed) = try await d.call("<wsnt:Renew><wsnt:TerminationTime>PT120S</wsnt:TerminationTime></wsnt:Renew>", at: 30, subscription: a)
        #expect(status == 200 && renewed["TerminationTime"]?.trimmedText == "2026-11-29T05:42:30Z")
        #expect(try await d.pull(a, at: 100).0 == 200, "renewed: alive at 100 s")
        let (gone, fault) = try await d.pull(b, at: 61)
        #expect(gone == 400 && Self.subcodes(fault) == ["InvalidArgVal", "ResourceUnknown"], "its term ended at 60 s")
        #expect(try await d.call("<wsnt:Unsubscribe/>", at: 101, subscription: a).0 == 200)
        #expect(try await d.pull(a, at: 102).0 == 400)
        #expect(try await d.call("<wsnt:Unsubscribe/>", at: 103, subscription: a).0 == 400, "twice: unknown")
        #expect(d.broker.pullPointCount(now: Self.start + 103) == 0)
    }

    @Test func anUnsubscribeEndsAWaitingPull() async throws {
        let d = Device()
        let id = try #require(try await d.create())
        _ = try await d.pull(id)
        async let waiting = d.pull(id, timeout: "PT60S")
        // Either order ends the pull at once: unsubscribed while it waits (woken, then unknown),
        // or before it started (unknown).
        _ = try await d.call("<wsnt:Unsubscribe/>", subscription: id)
        #expect(try await waiting.0 == 400)
    }

    @Test func badTermsFiltersAndAddressesAreFaultsThatChangeNothing() async throws {
        let d = Device(maxPullPoints: 2)
        for (inner, code) in [("<tev:InitialTerminationTime>soon</tev:InitialTerminationTime>", "InvalidTerminationTime"),
                              ("<tev:InitialTerminationTime>2020-01-01T00:00:00Z</tev:InitialTerminationTime>", "InvalidTerminationTime"),
                              ("<tev:Filter><wsnt:TopicExpression Dialect=\"urn:x\">tns1:RuleEngine</wsnt:TopicExpression></tev:Filter>", "TopicExpressionDialectUnknownFault"),
                              ("<tev:Filter><wsnt:TopicExpression>tns1:Device/Trigger/Relay</wsnt:TopicExpression></tev:Filter>", "InvalidTopicExpressionFault"),
                              ("<tev:Filter><wsnt:MessageContent>boolean(//x)</wsnt:MessageContent></tev:Filter>", "InvalidMessageContentExpressionFault")] {
            let (status, fault) = try await d.call("<tev:CreatePullPointSubscription>\(inner)</tev:CreatePullPointSubscription>")
            #expect(status == 400 && Self.subcodes(fault).last == code, "\(inner): \(Self.subcodes(fault))")
        }
        #expect(d.broker.pullPointCount(now: Self.start) == 0)
        let (status, fault) = try await d.call("<tev:PullMessages><tev:Timeout>PT1S</tev:Timeout><tev:MessageLimit>1</tev:MessageLimit></tev:PullMessages>")
        #expect(status == 400 && Self.subcodes(fault).last == "NoSubscription", "PullMessages at the service's address")
        let id = try #require(try await d.create())
        #expect(try await d.call("<tev:PullMessages><tev:Timeout>1 minute</tev:Timeout><tev:MessageLimit>1</tev:MessageLimit></tev:PullMessages>",
                                 subscription: id).0 == 400)
        #expect(try await d.call("<tev:PullMessages><tev:Timeout>PT1S</tev:Timeout><tev:MessageLimit>0</tev:MessageLimit></tev:PullMessages>",
                                 subscription: id).0 == 400)
        #expect(try await d.create() != nil)
        let (full, refusal) = try await d.call("<tev:CreatePullPointSubscription/>")
        #expect(full == 500 && Self.subcodes(refusal).last == "MaxPullPoints", "two pull points at most here")
    }

    @Test func aTopicFilterSelectsItsTopics() async throws {
        let d = Device()
        let id = try #require(try await d.create("<tev:Filter><wsnt:TopicExpression Dialect=\"http://www.onvif.org/ver10/tev/topicExpression/ConcreteSet\">tns1:RuleEngine//.</wsnt:TopicExpression></tev:Filter>"))
        let m = Self.messages(try await d.pull(id).1)
        #expect(m.count == 2 && m.allSatisfy { $0.topic == "tns1:RuleEngine/CellMotionDetector/Motion" })
        let both = try #require(try await d.create("<tev:Filter><wsnt:TopicExpression>tns1:VideoSource/MotionAlarm|tns1:RuleEngine/CellMotionDetector/Motion</wsnt:TopicExpression></tev:Filter>"))
        #expect(Self.messages(try await d.pull(both).1).count == 4)
    }

    @Test func theEventPropertiesNameBothTopicsAsProperties() async throws {
        let (status, r) = try await Device().call("<tev:GetEventProperties/>")
        #expect(status == 200 && r["FixedTopicSet"]?.trimmedText == "true")
        let motion = r["TopicSet", "RuleEngine", "CellMotionDetector", "Motion"]
        #expect(motion?.attribute("topic") == "true" && motion?["MessageDescription"]?.attribute("IsProperty") == "true")
        #expect(motion?["MessageDescription", "Data", "SimpleItemDescription"]?.attribute("Name") == "IsMotion")
        #expect(r["TopicSet", "VideoSource", "MotionAlarm", "MessageDescription", "Data", "SimpleItemDescription"]?.attribute("Name") == "State")
    }

    @Test func durationsAndMoments() {
        #expect(XSDTime.duration("PT600S") == 600 && XSDTime.duration("PT1M") == 60 && XSDTime.duration("P1DT2H") == 93_600)
        #expect(XSDTime.duration("PT0.5S") == 0.5 && XSDTime.duration("P0DT0H1M0S") == 60)
        for bad in ["P", "PT", "1M", "PT1", "P1H", "PTS", "-PT1S", ""] { #expect(XSDTime.duration(bad) == nil, "\(bad)") }
        #expect(XSDTime.moment("2026-11-29T05:40:00Z") == Self.start)
        #expect(XSDTime.moment("2026-11-29T06:40:00+01:00") == Self.start)
        #expect(XSDTime.moment("2026-11-29T05:40:00.5") == Self.start + 0.5)
        for bad in ["2026-13-29T05:40:00Z", "2026-11-29 05:40:00", "2026-11-29T05:40:00Q", "yesterday"] { #expect(XSDTime.moment(bad) == nil, "\(bad)") }
        #expect(XSDTime.format(Self.start + 1.25, milliseconds: true) == "2026-11-29T05:40:01.250Z")
    }
}
