// When a WebRTC peer — a WHEP viewer or a talker — is taken for gone: its connection failed or
// closed (at once), disconnected for 5 s, silent for 5 s while connected (a viewer sends RTCP
// reports every second or so, a talker RTP all along: ICE on its own may not notice a peer
// that vanished), or never connected within the connect timeout. The WHEP and talk services'
// sweeps ask it each second.

import Streaming

struct PeerHealth: Sendable {
    /// Seconds without a packet from a connected peer, or disconnected, before it is gone.
    static let silenceLimit = 5.0

    let created: Double
    private var unwellSince: Double?
    /// It has been connected (a failure after is a lost connection, not one never made).
    private var wasConnected = false

    init(created: Double) { self.created = created }

    /// Whether a peer in `state`, `silence` seconds since its last packet, is gone at `now`.
    mutating func expired(_ state: WebRTCPeer.State, silence: Double?, now: Double, connectTimeout: Double) -> Bool {
        switch state {
        case .connected where (silence ?? 0) >= Self.silenceLimit: wasConnected = true; return true
        case .connected: unwellSince = nil; wasConnected = true; return false
        case .failed, .closed: return true
        case .disconnected:
            let since = unwellSince ?? now
            unwellSince = since
            return now - since >= Self.silenceLimit
        case .new, .connecting: return now - created > connectTimeout
        }
    }

    /// Why a peer in `state` that `expired` ended, for the log: a connection never made (ICE
    /// found no pair that answers, or none within the connect timeout) told apart from one lost.
    func reason(_ state: WebRTCPeer.State, connectTimeout: Double) -> String {
        switch state {
        case .failed where wasConnected: "its connection failed (ICE, DTLS or the pipeline)"
        case .failed: "ICE failed: no candidate pair succeeded"
        case .closed: "it was closed"
        case .disconnected: "disconnected for \(Int(Self.silenceLimit)) s"
        case .connected: "silent for \(Int(Self.silenceLimit)) s (no RTCP from it: the tab closed, the network gone)"
        case .new, .connecting: "it did not connect within \(Int(connectTimeout)) s (timeout: no candidate pair answered)"
        }
    }
}
