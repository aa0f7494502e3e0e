// The WebRTC viewer's stream from its receiver reports (StreamAdapter), fed reports as a slow
// link gives them: it starts on the sub stream and moves up after 2 s of quiet; loss and a
// growing round trip move it down at once; quiet moves it back up after 10 s, or 20 s when
// the move down was a failed probe.

import Session
import Streaming
import Testing
@testable import ViewfinderApp

@Suite struct StreamAdapterTests {
    static func report(lost: Double = 0, rtt: Double = 0.02, bytes: UInt64) -> LinkReport {
        LinkReport(reported: true, fractionLost: lost, roundTrip: rtt, jitter: 0.001, packetsLost: 0, bytesSent: bytes, packetsSent: 0)
    }

    @Test func itStartsLowMovesUpWhenQuietDownAtLossAndProbesBackUp() {
        var a = StreamAdapter()
        var bytes: UInt64 = 0
        func step(_ t: Double, lost: Double = 0, rtt: Double = 0.02, kbits: UInt64 = 2000) -> LiveStreamName? {
            bytes += kbits * 1000 / 8
            return a.update(Self.report(lost: lost, rtt: rtt, bytes: bytes), now: t)
        }
        #expect(a.stream == .sub, "a viewer starts on the sub stream")
        #expect(step(0, kbits: 500) == nil && step(1, kbits: 500) == nil)
        #expect(step(2, kbits: 500) == .main, "two seconds of quiet: up")
        #expect(step(3) == nil && step(4) == nil, "a clean link: the main stream")
        #expect(abs(a.sendRate - 2000) < 1, "the send rate: \(a.sendRate)")
        #expect(step(5, lost: 0.3) == .sub, "30 % lost: down at once (its first probe failed)")
        var up: Double?
        for t in 6...40 where up == nil { if step(Double(t), kbits: 500) == .main { up = Double(t) } }
        #expect(up == 26, "after a failed probe: 20 s of quiet, \(up ?? -1)")
        #expect(step(27, lost: 0.5) == .sub, "the probe failed")
        up = nil
        for t in 28...60 where up == nil { if step(Double(t), kbits: 500) == .main { up = Double(t) } }
        #expect(up == 48, "20 s again: \(up ?? -1)")
        for t in 49...80 { #expect(step(Double(t)) == nil, "the probe holds") }
        #expect(step(81, lost: 0.2) == .sub, "the link worsened under the main stream")
        up = nil
        for t in 82...110 where up == nil { if step(Double(t), kbits: 500) == .main { up = Double(t) } }
        #expect(up == 92, "not a failed probe: 10 s, \(up ?? -1)")
    }

    @Test func onASlowLinkTheFirstProbeFailsAndTheNextWaitsTwentySeconds() {
        var a = StreamAdapter()
        #expect(a.update(Self.report(bytes: 1000), now: 0) == nil)
        #expect(a.update(Self.report(bytes: 2000), now: 2) == .main)
        #expect(a.update(Self.report(lost: 0.6, rtt: 0.3, bytes: 3000), now: 3) == .sub)
        var up: Double?
        for t in 4...30 where up == nil { if a.update(Self.report(bytes: UInt64(3000 + t)), now: Double(t)) == .main { up = Double(t) } }
        #expect(up == 24, "\(up ?? -1)")
    }

    @Test func aQueueFillingMovesDownOnItsSecondReportAndOneSpikeDoesNot() {
        var a = StreamAdapter()
        #expect(a.update(Self.report(rtt: 0.02, bytes: 0), now: -2) == nil)
        #expect(a.update(Self.report(rtt: 0.02, bytes: 1000), now: 0) == .main)
        #expect(a.update(Self.report(rtt: 0.4, bytes: 2000), now: 1) == nil, "one late report")
        #expect(a.update(Self.report(rtt: 0.03, bytes: 3000), now: 2) == nil)
        #expect(a.update(Self.report(rtt: 0.35, bytes: 4000), now: 3) == nil)
        #expect(a.update(Self.report(rtt: 0.5, bytes: 5000), now: 4) == .sub, "two in a row, 330 ms and more over the path's 20 ms")
        #expect(a.baseRoundTrip == 0.02)
    }

    /// The viewer's last report covers the few milliseconds since its previous one (a browser
    /// losing packets sends many): its fraction says nothing was lost, while its count of lost
    /// packets climbs by a third of what was sent in the second.
    @Test func lossCountedOverTheSecondMovesDownWhenTheLastReportsFractionIsClean() {
        var a = StreamAdapter()
        func report(lost: Double = 0, packetsLost: Int64, sent: UInt64) -> LinkReport {
            LinkReport(reported: true, fractionLost: lost, roundTrip: 0.02, jitter: 0.001, packetsLost: packetsLost,
                       bytesSent: sent * 1000, packetsSent: sent)
        }
        #expect(a.update(report(packetsLost: 0, sent: 50), now: 0) == nil)
        #expect(a.update(report(packetsLost: 0, sent: 100), now: 2) == .main)
        #expect(a.update(report(packetsLost: 1, sent: 300), now: 3) == nil && a.fractionLost == 0.005, "1 of 200: \(a.fractionLost)")
        #expect(a.update(report(packetsLost: 70, sent: 500), now: 4) == .sub, "69 of 200 lost, the report's fraction 0")
        #expect(abs(a.fractionLost - 0.345) < 1e-9)
        #expect(a.update(report(lost: 0.5, packetsLost: 70, sent: 550), now: 5) == nil && a.fractionLost == 0.5,
                "the report's own fraction, when it is the larger")
    }

    /// A viewer whose lost packets are sent again (rtx): one second of loss — the main stream's
    /// keyframe dropped at a shallow queue and repaired — keeps it on the main stream; a second
    /// second of it in a row moves it down, as a link too slow for the stream does.
    @Test func aViewerWhoseLossIsRepairedMovesDownOnlyWhenTheLossLasts() {
        var a = StreamAdapter(repairs: true)
        #expect(a.update(Self.report(bytes: 1000), now: 0) == nil)
        #expect(a.update(Self.report(bytes: 2000), now: 2) == .main)
        #expect(a.update(Self.report(lost: 0.61, bytes: 3000), now: 3) == nil, "the keyframe's second")
        #expect(a.update(Self.report(lost: 0.03, bytes: 4000), now: 4) == nil && a.stream == .main)
        #expect(a.update(Self.report(lost: 0.4, bytes: 5000), now: 5) == nil)
        #expect(a.update(Self.report(lost: 0.5, bytes: 6000), now: 6) == .sub, "the loss lasted")
        var b = StreamAdapter()
        #expect(b.update(Self.report(bytes: 1000), now: 0) == nil && b.update(Self.report(bytes: 2000), now: 2) == .main)
        #expect(b.update(Self.report(lost: 0.61, bytes: 3000), now: 3) == .sub, "without rtx: down at once")
    }

    @Test func noReceiverReportYetDecidesNothing() {
        var a = StreamAdapter()
        let none = LinkReport(reported: false, fractionLost: 0, roundTrip: 0, jitter: 0, packetsLost: 0, bytesSent: 10, packetsSent: 1)
        #expect(a.update(none, now: 0) == nil && a.update(none, now: 30) == nil && a.stream == .sub)
    }
}
