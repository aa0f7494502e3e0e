// What goes over the broker: a topic, bytes, and MQTT 5's request/response properties.

public struct MQTTMessage: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: Int32
    /// Kept by the broker for whoever subscribes later (state, availability, discovery).
    public var retain: Bool
    /// MQTT 5 Response Topic: where the asker wants the answer.
    public var responseTopic: String?
    /// MQTT 5 Correlation Data: echoed with the answer so the asker can pair them.
    public var correlationData: [UInt8]?
    /// MQTT 5 Content Type.
    public var contentType: String?

    public init(topic: String, payload: [UInt8], qos: Int32 = 0, retain: Bool = false,
                responseTopic: String? = nil, correlationData: [UInt8]? = nil, contentType: String? = nil) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.responseTopic = responseTopic
        self.correlationData = correlationData
        self.contentType = contentType
    }

    public init(topic: String, text: String, qos: Int32 = 0, retain: Bool = false) {
        self.init(topic: topic, payload: Array(text.utf8), qos: qos, retain: retain)
    }
}

/// Where and how to connect.
public struct MQTTOptions: Sendable, Equatable {
    public struct TLS: Sendable, Equatable {
        /// The CA that signed the broker's certificate (PEM); nil: the system's.
        public var caFile: String?
        /// A client certificate and its key (PEM), for a broker that asks for one.
        public var certificateFile: String?
        public var keyFile: String?
        public init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil) {
            self.caFile = caFile
            self.certificateFile = certificateFile
            self.keyFile = keyFile
        }
    }

    public var host: String
    public var port: Int
    public var tls: TLS?
    public var username: String?
    public var password: String?
    public var clientID: String
    /// Seconds between pings; the broker declares us gone after 1.5 × this without a word.
    public var keepAlive: Int
    /// Published by the broker when we vanish (retained `offline`).
    public var will: MQTTMessage?
    /// Reconnect waits: first, then doubling up to the most. A broker that restarts is back in
    /// well under a second, and a host should be too (issue 45 measured 0.99 s median with a
    /// first wait of 0.5 s); one that stays away costs a try every 2 s.
    public var reconnectDelay: (first: Double, most: Double) { (0.1, 2) }

    public init(host: String, port: Int, tls: TLS? = nil, username: String? = nil, password: String? = nil,
                clientID: String, keepAlive: Int = 10, will: MQTTMessage? = nil) {
        self.host = host
        self.port = port
        self.tls = tls
        self.username = username
        self.password = password
        self.clientID = clientID
        self.keepAlive = keepAlive
        self.will = will
    }
}
