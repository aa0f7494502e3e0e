// What the transports throw: the GStreamer call or step that failed, and why.

public enum StreamingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// GStreamer or one of the plugins the pipelines need is missing.
    case unavailable(String)
    /// The RTSP server could not listen.
    case listen(String)
    /// The WHEP offer is not SDP webrtcbin accepts.
    case malformedOffer(String)
    /// The offer has no H.264 this server can send (packetization-mode 1).
    case noH264(String)
    /// A talk offer sends no Opus.
    case noOpus(String)
    /// The WebRTC pipeline failed.
    case peer(String)
    /// Every port of the configured range (webrtc.udpPorts) is taken by a peer.
    case noFreePort(ClosedRange<Int>)
    /// A trickled ICE fragment that is not RFC 8840's grammar.
    case badFragment(ICEFragmentError)
    /// A well-formed fragment the session cannot take (another ICE session's credentials, a mid
    /// the offer has not).
    case unusableFragment(String)
    /// A PATCH asking for an ICE restart (RFC 9725, section 4.3.2): not offered.
    case iceRestart

    public var description: String {
        switch self {
        case .unavailable(let m), .listen(let m), .malformedOffer(let m), .noH264(let m), .noOpus(let m), .peer(let m): m
        case .noFreePort(let r): "every port of webrtc.udpPorts (\(r.lowerBound)–\(r.upperBound)) is taken by a peer"
        case .badFragment(let e): e.description
        case .unusableFragment(let m): m
        case .iceRestart: "an ICE restart is not offered: open a new session"
        }
    }
}

import CGStreamerShim

enum GStreamer {
    /// An answer without a local candidate, where ICE was held to a range of ports: libnice
    /// found none free in it (each peer holds its own; none is shared).
    static func checkPorts(_ answer: String, _ ice: ICEConfiguration) throws(StreamingError) {
        guard let ports = ice.ports, !answer.contains("a=candidate:") else { return }
        throw .noFreePort(ports)
    }

    /// GStreamer initialized and every element present (once per process).
    static func start() throws(StreamingError) {
        var error = [CChar](repeating: 0, count: 256)
        guard vfg_start(&error, error.count) == 0 else {
            throw .unavailable(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    }

    static func message(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
