// Which of its camera's live streams a WebRTC viewer gets, from what its receiver reports say
// of its link (issue 38): the main stream while the link carries it, the sub stream when it
// does not — and back up after a quiet spell. A viewer starts on the sub stream, whose
// keyframe any link carries, and is moved up once two seconds of reports are quiet (as a
// congestion controller starts low and ramps up): a first keyframe of the main stream on a
// slow link would be lost in the link's queue, and the picture would not start at all. There is no bandwidth estimate to read here
// (webrtcbin has no congestion controller; the browser's REMB or transport-wide feedback is
// not parsed), so the reports' loss and round trip decide, as a loss-based controller does.
// The loss is the larger of the last report's own fraction and the viewer's count of packets
// lost over the last second against the packets sent in it: a report's fraction covers only
// the time since the viewer's previous report, and a browser that is losing packets sends
// reports often (each picture-loss request goes in a compound packet with one), so the last
// of them may cover a few milliseconds that lost nothing — a probe on a 1 Mbit/s link was
// seen held 12 s on the main stream so, with the viewer's count of lost packets climbing.
//
// - down at once when ≥ 10 % of packets were lost, or when two reports in a row
//   put the round trip 250 ms over the least seen (a queue filling at a slow link); for a
//   viewer whose lost packets are sent again (it negotiated `rtx`), on the second second of
//   such loss in a row: a keyframe's burst that a shallow router queue dropped is repaired
//   within a round trip, and the stream plays on (1080p30 through 20 Mbit/s with a 20 ms queue:
//   one second at 61 % lost as the main stream's keyframe came, then 30 frames/s) — while a
//   link too slow for the stream goes on losing;
// - up after `probeWait` seconds of quiet on the sub stream (< 2 % lost, round trip within
//   100 ms of the least): a probe — 2 s at the start, 10 s after the link worsened under the
//   main stream, 20 s after a probe that failed (a failed probe freezes the picture for some
//   two seconds: on a link that stays slow that is a tenth of the time; a restored link is
//   still found within 30 s).
//
// The streams are encoded once for every viewer: a move is this viewer's alone, at the target
// stream's next keyframe (asked for when it joins).

import Session
import Streaming

struct StreamAdapter: Sendable {
    static let lossDown = 0.10, lossQuiet = 0.02
    static let queueDown = 0.25, queueQuiet = 0.10
    static let startProbe = 2.0, laterProbe = 10.0, afterFailedProbe = 20.0, probeFailsWithin = 10.0

    private(set) var stream: LiveStreamName = .sub
    /// The viewer's lost packets are sent again when it asks (it negotiated `rtx`).
    let repairs: Bool
    /// The least round trip seen: the path's own, without a queue.
    private(set) var baseRoundTrip: Double?
    /// The picture's send rate over the last interval, kbit/s.
    private(set) var sendRate: Double = 0
    private(set) var last: LinkReport?
    /// The loss that decided the last update (0…1): see the top of the file.
    private(set) var fractionLost: Double = 0
    private var lastAt: Double?
    private var queuedReports = 0
    private var lossyReports = 0
    private var quietSince: Double?
    private var probeWait = startProbe
    private var probedAt: Double?

    init(repairs: Bool = false) { self.repairs = repairs }

    /// Takes the link's report at `now` (monotonic seconds): the stream to move to, or nil to stay.
    mutating func update(_ r: LinkReport, now: Double) -> LiveStreamName? {
        let previous = last
        if let previous, let at = lastAt, now > at, r.bytesSent >= previous.bytesSent {
            sendRate = Double(r.bytesSent - previous.bytesSent) * 8 / 1000 / (now - at)
        }
        (last, lastAt) = (r, now)
        guard r.reported else { return nil }
        var lost = r.fractionLost
        if let p = previous, p.reported, r.packetsSent > p.packetsSent, r.packetsLost >= p.packetsLost {
            lost = max(lost, min(1, Double(r.packetsLost - p.packetsLost) / Double(r.packetsSent - p.packetsSent)))
        }
        fractionLost = lost
        if r.roundTrip > 0 { baseRoundTrip = min(baseRoundTrip ?? r.roundTrip, r.roundTrip) }
        let queue = baseRoundTrip.map { r.roundTrip - $0 } ?? 0
        queuedReports = queue > Self.queueDown ? queuedReports + 1 : 0
        lossyReports = lost >= Self.lossDown ? lossyReports + 1 : 0
        let congested = lossyReports >= (repairs ? 2 : 1) || queuedReports >= 2
        let quiet = lost < Self.lossQuiet && queue < Self.queueQuiet
        switch stream {
        case .main:
            if congested {
                let probeFailed = probedAt.map { now - $0 < Self.probeFailsWithin } ?? false
                probeWait = probeFailed ? Self.afterFailedProbe : Self.laterProbe
                probedAt = nil
                quietSince = nil
                queuedReports = 0
                lossyReports = 0
                stream = .sub
                return .sub
            }
            return nil
        case .sub:
            guard quiet else { quietSince = nil; return nil }
            let since = quietSince ?? now
            quietSince = since
            guard now - since >= probeWait else { return nil }
            quietSince = nil
            probedAt = now
            stream = .main
            return .main
        case .vp8:
            return nil  // one VP8 rendition: nothing to move to (a VP8 viewer is not adaptive)
        }
    }
}
