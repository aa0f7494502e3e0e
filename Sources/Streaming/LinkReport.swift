// What a WebRTC viewer's receiver reports (RTCP RR, RFC 3550) say of the picture's path, and
// what was sent on it — webrtcbin's stats for the picture's SSRC, read once a second by the
// service that adapts the viewer's stream to its link (issue 38).

public struct LinkReport: Sendable, Equatable {
    /// A receiver report has come (the loss, round trip and jitter are its; zero before).
    public var reported: Bool
    /// The last report's fraction of packets lost since the one before (0…1).
    public var fractionLost: Double
    /// Seconds, from the last report's LSR/DLSR.
    public var roundTrip: Double
    /// Interarrival jitter, seconds.
    public var jitter: Double
    /// Packets lost since the start, as the viewer counts them.
    public var packetsLost: Int64
    /// The picture's RTP bytes and packets sent since the start.
    public var bytesSent: UInt64
    public var packetsSent: UInt64
    /// The ICE pair selected, nil before one is.
    public var pair: Pair?

    /// One end of the selected pair.
    public struct End: Sendable, Equatable {
        /// "host", "srflx", "prflx" or "relay".
        public var type: String
        /// "udp" or "tcp".
        public var `protocol`: String
        /// A relayed end's way to its TURN server; nil for the others.
        public var relayProtocol: String?
        public var address: String
        public var port: Int

        public init(type: String, protocol: String, relayProtocol: String?, address: String, port: Int) {
            self.type = type
            self.protocol = `protocol`
            self.relayProtocol = relayProtocol
            self.address = address
            self.port = port
        }
    }

    public struct Pair: Sendable, Equatable {
        public var local: End
        public var remote: End

        public init(local: End, remote: End) {
            self.local = local
            self.remote = remote
        }
    }

    public init(reported: Bool, fractionLost: Double, roundTrip: Double, jitter: Double, packetsLost: Int64,
                bytesSent: UInt64, packetsSent: UInt64, pair: Pair? = nil) {
        self.reported = reported
        self.fractionLost = fractionLost
        self.roundTrip = roundTrip
        self.jitter = jitter
        self.packetsLost = packetsLost
        self.bytesSent = bytesSent
        self.packetsSent = packetsSent
        self.pair = pair
    }
}
