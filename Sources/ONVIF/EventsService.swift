// The events service (ONVIF Events, ver10, /onvif/events_service): the motion detector's
// state on pull points (CreatePullPointSubscription, then PullMessages, Renew, Unsubscribe and
// SetSynchronizationPoint at the subscription's own address, /onvif/subscriptions/<id>), and
// pushed to a consumer's address (WS-BaseNotification's Subscribe: Notify messages POSTed by
// PushDelivery; Renew, Unsubscribe and SetSynchronizationPoint at the same kind of address).
// Home Assistant's ONVIF integration subscribes both ways: a webhook when it has an address
// the camera can reach, a pull point otherwise.

import SOAP

enum EventsService {
    /// A pull stays open at most this long whatever Timeout asks (Home Assistant asks a minute
    /// and reads for 90 s).
    static let maxPullSeconds = 60.0
    /// A term given by the device when the request names none, and the longest it grants.
    static let defaultTerm = 600.0, maxTerm = 3_600.0

    /// The longest consumer address taken.
    static let maxConsumerAddress = 2_048

    static func operations(_ broker: EventBroker, push: PushDelivery?) -> [QName: Operation] {
        func tevOp(_ name: String) -> QName { QName(ONVIFNamespace.events, name) }
        func wsntOp(_ name: String) -> QName { QName(ONVIFNamespace.notification, name) }
        var ops: [QName: Operation] = [
            tevOp("GetServiceCapabilities"): Operation(access: .preAuth) { _, _ in tev("GetServiceCapabilitiesResponse", [capabilities(broker, push: push != nil)]) },
            tevOp("GetEventProperties"): Operation(access: .read) { _, _ in eventProperties() },
            tevOp("CreatePullPointSubscription"): Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let topics = try filter(r.child("Filter"))
                let term = try termination(r.child("InitialTerminationTime")?.trimmedText, now: c.now)
                guard let id = broker.create(topics: topics, termination: term, now: c.now) else {
                    throw SOAPFault(.receiver, [QName(ONVIFNamespace.error, "Action"), QName(ONVIFNamespace.error, "MaxPullPoints")],
                                    "All \(broker.maxPullPoints) subscriptions (pull points and push subscriptions) are in use; unsubscribe one or let its term end.")
                }
                return tev("CreatePullPointSubscriptionResponse", [
                    tev("SubscriptionReference", [endpoint("\(c.base)/onvif/subscriptions/\(id)")]),
                    wsnt("CurrentTime", XSDTime.format(c.now)),
                    wsnt("TerminationTime", XSDTime.format(term)),
                ])
            },
            tevOp("PullMessages"): Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let id = try subscription(c)
                if let consumer = broker.consumer(id) {
                    throw SOAPFault(.sender, [QName(ONVIFNamespace.error, "ActionNotSupported")],
                                    "Subscription \(id) pushes its messages to \(consumer); PullMessages is for pull points.")
                }
                guard let text = r.child("Timeout")?.trimmedText, let timeout = XSDTime.duration(text) else {
                    throw invalidArgument("InvalidTimeout", "PullMessages needs a Timeout, an xs:duration such as PT60S.")
                }
                guard let limit = r.child("MessageLimit").flatMap({ Int($0.trimmedText) }), limit > 0 else {
                    throw invalidArgument("InvalidMessageLimit", "PullMessages needs a MessageLimit of at least 1.")
                }
                guard let messages = await broker.pull(id, limit: limit, timeout: min(timeout, maxPullSeconds), now: c.now),
                      let term = broker.termination(id) else { throw unknown(id) }
                return tev("PullMessagesResponse", [tev("CurrentTime", XSDTime.format(c.now)),
                                                   tev("TerminationTime", XSDTime.format(term))] + messages.map { notification($0) })
            },
            tevOp("SetSynchronizationPoint"): Operation(access: .read) { (_: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let id = try subscription(c)
                guard broker.synchronize(id, now: c.now) else { throw unknown(id) }
                return tev("SetSynchronizationPointResponse", [])
            },
            wsntOp("Renew"): Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let id = try subscription(c)
                let term = try termination(r.child("TerminationTime")?.trimmedText, now: c.now)
                guard broker.renew(id, termination: term, now: c.now) != nil else { throw unknown(id) }
                return wsnt("RenewResponse", [wsnt("TerminationTime", XSDTime.format(term)), wsnt("CurrentTime", XSDTime.format(c.now))])
            },
            wsntOp("Unsubscribe"): Operation(access: .read) { (_: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let id = try subscription(c)
                guard broker.unsubscribe(id, now: c.now) else { throw unknown(id) }
                return wsnt("UnsubscribeResponse", [])
            },
        ]
        if let push {
            ops[wsntOp("Subscribe")] = Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let consumer = try consumerAddress(r.child("ConsumerReference"))
                let topics = try filter(r.child("Filter"))
                let term = try termination(r.child("InitialTerminationTime")?.trimmedText, now: c.now)
                guard let id = broker.create(topics: topics, termination: term, now: c.now, consumer: consumer) else {
                    throw creationFailed(.receiver, "All \(broker.maxPullPoints) subscriptions are in use; unsubscribe one or let its term end.")
                }
                let address = "\(c.base)/onvif/subscriptions/\(id)"
                Task { await push.deliver(broker, id: id, consumer: consumer, subscription: address) }
                return wsnt("SubscribeResponse", [
                    wsnt("SubscriptionReference", [endpoint(address)]),
                    wsnt("CurrentTime", XSDTime.format(c.now)),
                    wsnt("TerminationTime", XSDTime.format(term)),
                ])
            }
        }
        return ops
    }

    /// WS-BaseNotification's refusal of a Subscribe: the device's (all in use) or the sender's (its address).
    static func creationFailed(_ code: SOAPFault.Code, _ reason: String) -> SOAPFault {
        SOAPFault(code, [QName(ONVIFNamespace.notification, "SubscribeCreationFailedFault")], reason)
    }

    /// Where a push subscription's Notify messages go: an http or https URL with a host. Any
    /// other scheme (file:, gopher:, …) is refused, so a subscriber cannot make the device read
    /// or send anything but a POST of its own events.
    static func consumerAddress(_ reference: XMLElement?) throws(SOAPFault) -> String {
        guard let address = reference?.child("Address")?.trimmedText, !address.isEmpty else {
            throw creationFailed(.sender, "Subscribe needs a ConsumerReference with an Address: where to POST the notifications.")
        }
        let lower = address.lowercased()
        let rest = lower.hasPrefix("http://") ? lower.dropFirst(7) : lower.hasPrefix("https://") ? lower.dropFirst(8) : nil
        let printable = address.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }
        guard let rest, let host = rest.split(separator: "/", omittingEmptySubsequences: false).first, !host.isEmpty,
              !host.contains("@"), printable, address.utf8.count <= maxConsumerAddress else {
            throw creationFailed(.sender, "The consumer address '\(address.prefix(200))' is not an http:// or https:// URL with a host "
                                     + "(no credentials in it, at most \(maxConsumerAddress) characters).")
        }
        return address
    }

    /// A push subscription's messages as one Notify envelope, each naming its subscription.
    static func notify(_ messages: [EventMessage], subscription: String) -> [UInt8] {
        Envelope.write(body: [wsnt("Notify", messages.map { notification($0, subscription: subscription) })],
                       header: [XMLElement(ONVIFNamespace.addressing, "Action",
                                           text: "http://docs.oasis-open.org/wsn/bw-2/NotificationConsumer/Notify")],
                       prefixes: ONVIFNamespace.prefixes)
    }

    /// A subscription's endpoint reference: its address (WS-Addressing).
    static func endpoint(_ address: String) -> XMLElement { XMLElement(ONVIFNamespace.addressing, "Address", text: address) }

    static func tev(_ name: String, _ children: [XMLElement]) -> XMLElement { XMLElement(ONVIFNamespace.events, name, children) }
    static func tev(_ name: String, _ text: String) -> XMLElement { XMLElement(ONVIFNamespace.events, name, text: text) }
    static func wsnt(_ name: String, _ children: [XMLElement]) -> XMLElement { XMLElement(ONVIFNamespace.notification, name, children) }
    static func wsnt(_ name: String, _ text: String) -> XMLElement { XMLElement(ONVIFNamespace.notification, name, text: text) }

    static func capabilities(_ broker: EventBroker, push: Bool) -> XMLElement {
        XMLElement(ONVIFNamespace.events, "Capabilities", attributes: [
            "WSSubscriptionPolicySupport": "false", "WSPausableSubscriptionManagerInterfaceSupport": "false",
            "MaxNotificationProducers": push ? String(broker.maxPullPoints) : "0", "MaxPullPoints": String(broker.maxPullPoints),
            "PersistentNotificationStorage": "false",
        ])
    }

    /// The pull point a request's address names.
    static func subscription(_ c: ONVIFContext) throws(SOAPFault) -> Int {
        guard let id = c.subscription else {
            throw invalidArgument("NoSubscription", "Send this to the subscription's address (CreatePullPointSubscription's SubscriptionReference).")
        }
        return id
    }

    static func unknown(_ id: Int) -> SOAPFault {
        SOAPFault(.sender, [QName(ONVIFNamespace.error, "InvalidArgVal"), QName(ONVIFNamespace.error, "ResourceUnknown")],
                  "No subscription \(id): it was unsubscribed, or its term ended without a Renew.")
    }

    /// A requested term: a duration or a moment, in the future, at most `maxTerm` away.
    static func termination(_ text: String?, now: Double) throws(SOAPFault) -> Double {
        guard let text, !text.isEmpty else { return now + defaultTerm }
        guard let term = XSDTime.term(text, now: now) else {
            throw invalidArgument("InvalidTerminationTime", "'\(text)' is neither an xs:duration (PT600S) nor an xs:dateTime.")
        }
        guard term > now else {
            throw invalidArgument("InvalidTerminationTime", "The termination time \(text) has passed.")
        }
        return min(term, now + maxTerm)
    }

    static let concreteSet = "http://www.onvif.org/ver10/tev/topicExpression/ConcreteSet"
    static let concrete = "http://docs.oasis-open.org/wsn/t-1/TopicExpression/Concrete"
    static let simple = "http://docs.oasis-open.org/wsn/t-1/TopicExpression/Simple"

    /// The topics a subscription's Filter selects (all without one). Topic expressions in
    /// ONVIF's ConcreteSet dialect (and WS-Topics' Concrete and Simple): alternatives joined by
    /// `|`, each a topic path whose `//.` takes the subtree; a prefix on a step is ignored, as
    /// only ONVIF's topic namespace is announced. Message-content filters are refused, not
    /// ignored: the pull point would send more than was asked.
    static func filter(_ f: XMLElement?) throws(SOAPFault) -> Set<MotionTopic> {
        guard let f else { return Set(MotionTopic.allCases) }
        if !f.children("MessageContent").isEmpty {
            throw SOAPFault(.sender, [QName(ONVIFNamespace.notification, "InvalidMessageContentExpressionFault")],
                            "Message-content filters are not supported; filter by topic.")
        }
        let expressions = f.children("TopicExpression")
        if expressions.isEmpty { return Set(MotionTopic.allCases) }
        var topics = Set<MotionTopic>()
        for e in expressions {
            let dialect = e.attribute("Dialect") ?? concreteSet
            guard [concreteSet, concrete, simple].contains(dialect) else {
                throw SOAPFault(.sender, [QName(ONVIFNamespace.notification, "TopicExpressionDialectUnknownFault")],
                                "The topic expression dialect \(dialect) is not supported (ConcreteSet is).")
            }
            for alternative in e.trimmedText.split(separator: "|") {
                var steps = alternative.split(separator: "/", omittingEmptySubsequences: false).map {
                    String($0.split(separator: ":").last ?? $0).trimmingWhitespace
                }
                let subtree = steps.count >= 2 && steps.suffix(2) == ["", "."]
                if subtree { steps.removeLast(2) }
                for t in MotionTopic.allCases where subtree ? t.path.starts(with: steps) : t.path == steps { topics.insert(t) }
            }
        }
        guard !topics.isEmpty else {
            throw SOAPFault(.sender, [QName(ONVIFNamespace.notification, "InvalidTopicExpressionFault")],
                            "No topic of this device matches \(expressions.map(\.trimmedText).joined(separator: " | ")); GetEventProperties lists them.")
        }
        return topics
    }

    /// One message; a push subscription's names its subscription (WS-BaseNotification's
    /// SubscriptionReference), as a consumer of several may tell them apart by it.
    static func notification(_ m: EventMessage, subscription: String? = nil) -> XMLElement {
        let source: [(String, String)], data: (String, String)
        switch m.topic {
        case .cellMotion:
            source = [("VideoSourceConfigurationToken", m.source), ("VideoAnalyticsConfigurationToken", "\(m.source)_motion"),
                      ("Rule", "MotionDetector")]
            data = ("IsMotion", m.moving ? "true" : "false")
        case .motionAlarm:
            source = [("Source", m.source)]
            data = ("State", m.moving ? "true" : "false")
        }
        let item = { (n: String, v: String) in tt("SimpleItem", attributes: ["Name": n, "Value": v]) }
        let reference = subscription.map { [wsnt("SubscriptionReference", [endpoint($0)])] } ?? []
        return wsnt("NotificationMessage", reference + [
            XMLElement(ONVIFNamespace.notification, "Topic", text: m.topic.text, attributes: ["Dialect": concreteSet]),
            wsnt("Message", [tt("Message", [tt("Source", source.map(item)), tt("Data", [item(data.0, data.1)])],
                                attributes: ["UtcTime": XSDTime.format(m.time, milliseconds: true), "PropertyOperation": m.operation.rawValue])]),
        ])
    }

    /// The topic set: both motion topics, each a property with its source and data items.
    static func eventProperties() -> XMLElement {
        func description(_ topic: MotionTopic) -> XMLElement {
            let items: [(String, String)] = topic == .cellMotion
                ? [("VideoSourceConfigurationToken", "tt:ReferenceToken"), ("VideoAnalyticsConfigurationToken", "tt:ReferenceToken"),
                   ("Rule", "xs:string")]
                : [("Source", "tt:ReferenceToken")]
            let data = topic == .cellMotion ? "IsMotion" : "State"
            let d = { (n: String, t: String) in tt("SimpleItemDescription", attributes: ["Name": n, "Type": t]) }
            return tt("MessageDescription", [tt("Source", items.map(d)), tt("Data", [d(data, "xs:boolean")])],
                      attributes: ["IsProperty": "true"])
        }
        func node(_ path: ArraySlice<String>, _ topic: MotionTopic) -> XMLElement {
            var e = XMLElement(ONVIFNamespace.topics, path.first!)
            if path.count == 1 {
                e.attributes[QName(ONVIFNamespace.topicsSchema, "topic")] = "true"
                e.children = [description(topic)]
            } else {
                e.children = [node(path.dropFirst(), topic)]
            }
            return e
        }
        return tev("GetEventPropertiesResponse", [
            tev("TopicNamespaceLocation", "http://www.onvif.org/onvif/ver10/topics/topicns.xml"),
            wsnt("FixedTopicSet", "true"),
            XMLElement(ONVIFNamespace.topicsSchema, "TopicSet", MotionTopic.allCases.map { node($0.path[...], $0) }),
            wsnt("TopicExpressionDialect", concreteSet),
            wsnt("TopicExpressionDialect", concrete),
            tev("MessageContentFilterDialect", "http://www.onvif.org/ver10/tev/messageContentFilter/ItemFilter"),
            tev("MessageContentSchemaLocation", "http://www.onvif.org/onvif/ver10/schema/onvif.xsd"),
        ])
    }
}

private extension String {
    var trimmingWhitespace: String {
        String(drop { $0 == " " || $0 == "\n" || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\n" || $0 == "\t" }.reversed())
    }
}
