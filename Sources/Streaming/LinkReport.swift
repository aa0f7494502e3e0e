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

    public init(reported: Bool, fractionLost: Double, roundTrip: Double, jitter: Double, packetsLost: Int64,
                bytesSent: UInt64, packetsSent: UInt64) {
        self.reported = reported
        self.fractionLost = fractionLost
        self.roundTrip = roundTrip
        self.jitter = jitter
        self.packetsLost = packetsLost
        self.bytesSent = bytesSent
        self.packetsSent = packetsSent
    }
}
