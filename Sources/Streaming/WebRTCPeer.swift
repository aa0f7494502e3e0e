// One WebRTC peer sending H.264 (or VP8, to a browser whose offer has no H.264) and, when the camera has sound and the offer takes Opus, Opus
// (webrtcbin): made from a client's SDP offer, it answers with every ICE candidate of its own
// in the answer, takes the client's later candidates trickled (`trickle`), and takes access
// units and sound packets through its feeds. DTLS-SRTP and ICE are webrtcbin's and libnice's.

import CGStreamerShim
import Glibc
import SystemSupport

public struct ICEConfiguration: Sendable, Equatable {
    /// "stun://host:port", or nil (no public STUN server by default).
    public var stunServer: String?
    /// "turn(s)://user:password@host:port" each.
    public var turnServers: [String]
    /// Addresses to offer host candidates on; empty: every interface.
    public var addresses: [String]
    /// The local ports a peer's ICE may take (webrtc.udpPorts); nil: any.
    public var ports: ClosedRange<Int>?
    /// Addresses a router forwards those ports from (webrtc.publicAddresses, numeric): the
    /// answer offers them as host candidates too (PublicCandidates).
    public var publicAddresses: [String]

    public init(stunServer: String? = nil, turnServers: [String] = [], addresses: [String] = [], ports: ClosedRange<Int>? = nil,
                publicAddresses: [String] = []) {
        self.stunServer = stunServer
        self.turnServers = turnServers
        self.addresses = addresses
        self.ports = ports
        self.publicAddresses = publicAddresses
    }
}

public final class WebRTCPeer: @unchecked Sendable {  // `raw` is used under `closed`, closed once after it is set
    private let raw: OpaquePointer
    private let closed = Locked(false)
    /// The SDP answer.
    public let answer: String
    /// The candidates ("address port") of each side's description: to tell the selected pair's
    /// ends apart (SelectedPair.swift).
    private let ends: SelectedPair.Ends
    /// Where the peer's access units go.
    public let feed: H264Feed
    /// What its picture is sent as.
    public enum Codec: Sendable { case h264, vp8 }
    public let codec: Codec
    /// Its offer takes H.264's Main profile; false: Constrained Baseline alone (Firefox's
    /// OpenH264), and the stream it takes must be encoded so while it watches.
    public let acceptsMain: Bool
    /// Its picture's lost packets are sent again when it asks: the answer has RFC 4588's
    /// retransmission stream (`rtx`), as it does where the offer has one.
    public var retransmits: Bool { answer.contains(" rtx/90000") }
    /// Where its Opus packets go: nil when the answer has no sound (none offered to it, or
    /// the offer receives no Opus).
    public let sound: AudioFeed?
    /// The offer's ICE session: its credentials and media sections, for trickled candidates.
    private let remote: OfferedICE
    /// What the server's own gathering lacked: a TURN server configured and no relayed
    /// candidate (refused, or not answering by the deadline), a STUN server that did not answer.
    public let gatheringProblems: [String]

    /// As RTCPeerConnectionState.
    public enum State: Int32, Sendable {
        case new = 0, connecting, connected, disconnected, failed, closed
    }

    /// Blocks up to `timeout` seconds (ICE gathering): call it off the request threads.
    /// `opusChannels`: the camera's sound as Opus at 48 kHz (nil: none).
    public init(offer: String, ice: ICEConfiguration, opusChannels: Int? = nil, timeout: Double = 3) throws(StreamingError) {
        try GStreamer.start()
        var error = [CChar](repeating: 0, count: 512)
        var answer: UnsafeMutablePointer<CChar>?
        var feed: OpaquePointer?
        var audio: OpaquePointer?
        var why: Int32 = 0
        let began = Clock.monotonic()
        let raw = withPeerOptions(offer: offer, ice: ice, timeout: timeout, opusChannels: opusChannels ?? 0) { options in
            vfg_peer_answer(options, &answer, &feed, &audio, &why, &error, error.count)
        }
        guard let raw, let answer, let feed else {
            let message = GStreamer.message(error)
            switch Int(why) {
            case Int(VFG_PEER_MALFORMED_OFFER): throw .malformedOffer(message)
            case Int(VFG_PEER_NO_H264): throw .noH264(message)
            default: throw .peer(message)
            }
        }
        self.raw = raw
        codec = vfg_peer_codec(raw) == 1 ? .vp8 : .h264
        acceptsMain = vfg_peer_accepts_main(raw) == 1
        self.answer = PublicCandidates.adding(ice.publicAddresses, to: String(cString: answer))
        ends = SelectedPair.Ends(answer: self.answer, offer: offer)
        remote = OfferedICE(offer)
        gatheringProblems = Self.problems(answer: self.answer, ice: ice, took: Clock.monotonic() - began)
        vfg_free(answer)
        self.feed = H264Feed(feed)
        sound = audio.map(AudioFeed.init)
        try GStreamer.checkPorts(self.answer, ice)  // deinit closes the peer
    }

    /// Loads what a first peer needs (plugins, the DTLS certificate) ahead of it; blocks for a
    /// while the first time: call it off the request threads.
    public static func warmUp() {
        guard (try? GStreamer.start()) != nil else { return }
        vfg_webrtc_warm_up()
    }

    /// Seconds since the peer last sent anything (its RTCP reports come at least each second
    /// or so), nil before it sent its first packet.
    public var silence: Double? {
        closed.withLock { c -> Double? in
            guard !c else { return nil }
            let ms = vfg_peer_silent_ms(raw)
            return ms < 0 ? nil : Double(ms) / 1000
        }
    }

    public var state: State {
        closed.withLock { c in c ? .closed : State(rawValue: vfg_peer_state(raw)) ?? .failed }
    }

    /// What the viewer's receiver reports say of the picture's path now, and what was sent on
    /// it (webrtcbin's stats); nil once closed or when webrtcbin gave none.
    public var link: LinkReport? {
        closed.withLock { c -> LinkReport? in
            guard !c else { return nil }
            var l = vfg_link()
            guard vfg_peer_link(raw, &l) == 0 else { return nil }
            return LinkReport(reported: l.reported != 0, fractionLost: l.fraction_lost, roundTrip: l.round_trip, jitter: l.jitter,
                              packetsLost: Int64(l.packets_lost), bytesSent: UInt64(l.bytes_sent), packetsSent: UInt64(l.packets_sent),
                              pair: SelectedPair.read(l.pair, ends))
        }
    }

    /// Takes candidates the viewer trickled (RFC 9725's PATCH): each to the media line its `mid`
    /// names — the BUNDLE group's first where the offer bundles, as every browser's does: one
    /// transport carries them all. Refused whole when the fragment is another ICE session's
    /// (another username fragment: an ICE restart, which is not offered), or names a mid the
    /// offer has not. Candidates after the viewer's end of candidates are taken: a browser that
    /// gathers continually (Chromium) finds more when its network changes, and they are the ones
    /// that reach it then. (libnice is not told of the end: it would only fail a pair sooner.)
    /// False, nothing given, when the peer ended meanwhile (its session is gone: a 404, as one
    /// that ended before the request came).
    public func trickle(_ fragment: ICEFragment) throws(StreamingError) -> Bool {
        if let ufrag = fragment.ufrag, ufrag != remote.ufrag {
            throw .unusableFragment("The fragment's ICE username fragment '\(ufrag)' is not this session's: an ICE restart is not offered; open a new session.")
        }
        var lines: [(UInt32, String)] = []
        for c in fragment.candidates {
            guard let mline = remote.mediaLine(for: c.mid) else {
                throw .unusableFragment("The offer has no media section with mid '\(c.mid ?? "")'.")
            }
            lines.append((UInt32(mline), c.line))
        }
        return closed.withLock { (c: inout Bool) -> Bool in
            guard !c else { return false }
            for (mline, line) in lines { vfg_peer_add_candidate(raw, mline, line) }
            return true
        }
    }

    /// What an answer's candidates say of the configured ICE servers, its gathering having
    /// taken `took` seconds. A server that refuses (a TURN server's 401 to the credentials, its
    /// quota) answers within two round trips; one that does not answer is given up by libnice
    /// only after its retransmissions — 2.0 s measured (Tests/live/test_nat.py, servers-silent),
    /// or the answer's deadline (3 s) first. So an answer without a relayed candidate that came
    /// sooner than `givenUpAfter` was refused; a later one was not answered — or refused slowly
    /// (seen once: 2.1 s), so it says both. Named by host only: a
    /// TURN URL here holds a password.
    static func problems(answer: String, ice: ICEConfiguration, took: Double) -> [String] {
        var out: [String] = []
        let silent = took >= givenUpAfter
        let gaveUp = "(given up after \((took * 10).rounded() / 10) s)"
        if !ice.turnServers.isEmpty && !answer.contains(" typ relay") {
            let hosts = ice.turnServers.map { url in url.split(separator: "@").last.map(String.init) ?? "?" }.joined(separator: ", ")
            let refused = "refused the allocation: its credentials (webrtc.turn's secret, as the TURN server's), or its quota"
            // A slow end is not proof of silence: a refusal too has taken 2.1 s (the rig's
            // turn-refused, once), so a slow one names both.
            out.append(silent ? "no TURN server (\(hosts)) gave a relay \(gaveUp): it did not answer, or it \(refused)"
                              : "the TURN server (\(hosts)) \(refused)")
        }
        // A camera on a public address has no reflexive candidate either (it would be its host
        // one): only a slow gathering says the STUN server was silent.
        if silent, let stun = ice.stunServer, !answer.contains(" typ srflx") {
            out.append("the STUN server \(stun) did not answer \(gaveUp)")
        }
        return out
    }

    /// Seconds of gathering after which a server that gave nothing did not answer (a refusal comes sooner).
    static let givenUpAfter = 1.5

    /// Whether `fragment` names other ICE credentials than the offer's (an ICE restart asks so).
    public func restarts(_ fragment: ICEFragment) -> Bool {
        (fragment.ufrag.map { $0 != remote.ufrag } ?? false) || (fragment.password.map { $0 != remote.password } ?? false)
    }

    /// Stops the pipeline (its feed closes); once. The pipeline's stop (set to NULL, which joins
    /// GStreamer's threads) runs outside the lock: a state or stats read under it has finished
    /// before the flag is set, and none starts after.
    public func close() {
        let first = closed.withLock { c -> Bool in defer { c = true }; return !c }
        guard first else { return }
        vfg_peer_close(raw)
    }

    deinit { close() }
}

/// What an offer says of its ICE session: its username fragment (session-level or the first
/// media section's) and its media sections' mids, in order, with the BUNDLE group's.
struct OfferedICE: Sendable {
    let ufrag: String?
    let password: String?
    let mids: [String?]
    /// The media line the BUNDLE group's first mid names (nil: no bundle).
    let bundled: Int?

    init(_ offer: String) {
        var ufrag: String?, password: String?, mids: [String?] = [], group: [String] = []
        for raw in offer.split(whereSeparator: \.isNewline) {
            if raw.hasPrefix("m=") { mids.append(nil) }
            else if raw.hasPrefix("a=mid:"), !mids.isEmpty { mids[mids.count - 1] = String(raw.dropFirst(6)) }
            else if raw.hasPrefix("a=ice-ufrag:"), ufrag == nil { ufrag = String(raw.dropFirst(12)) }
            else if raw.hasPrefix("a=ice-pwd:"), password == nil { password = String(raw.dropFirst(10)) }
            else if raw.hasPrefix("a=group:BUNDLE "), group.isEmpty { group = raw.dropFirst(15).split(separator: " ").map(String.init) }
        }
        self.ufrag = ufrag
        self.password = password
        self.mids = mids
        bundled = group.first.flatMap { first in mids.firstIndex(of: first) }
    }

    /// The line a candidate under `mid` goes to: the bundle's where there is one (webrtcbin has
    /// one ICE stream for the group), else the mid's own; no mid, the first.
    func mediaLine(for mid: String?) -> Int? {
        guard let mid else { return bundled ?? 0 }
        guard let own = mids.firstIndex(of: mid) else { return nil }
        return bundled ?? own
    }
}

/// The C options for `offer` and `ice` (their strings alive for `body`'s call).
func withPeerOptions<R>(offer: String, ice: ICEConfiguration, timeout: Double, opusChannels: Int,
                        _ body: (UnsafePointer<vfg_peer_options>) -> R) -> R {
    let turns = ice.turnServers.map { strdup($0) }
    let addresses = ice.addresses.map { strdup($0) }
    defer { (turns + addresses).forEach { free($0) } }
    return turns.map { UnsafePointer($0) }.withUnsafeBufferPointer { t in
        addresses.map { UnsafePointer($0) }.withUnsafeBufferPointer { a in
            var options = vfg_peer_options(
                offer: nil, stun_server: nil, turn_servers: t.baseAddress, turn_count: t.count,
                addresses: a.baseAddress, address_count: a.count,
                min_port: UInt32(ice.ports?.lowerBound ?? 0), max_port: UInt32(ice.ports?.upperBound ?? 0),
                timeout_ms: UInt32(max(0.1, timeout) * 1000),
                opus_channels: Int32(opusChannels))
            return offer.withCString { o in
                options.offer = o
                return withOptionalCString(ice.stunServer) { s in
                    options.stun_server = s
                    return body(&options)
                }
            }
        }
    }
}

private func withOptionalCString<R>(_ s: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let s else { return body(nil) }
    return s.withCString { body($0) }
}
