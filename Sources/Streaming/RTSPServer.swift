// An RTSP server (gst-rtsp-server) serving mounts as shared H.264 media (with AAC sound when
// the delegate gives one) or JPEG pictures: DESCRIBE, SETUP
// (RTP over UDP, or interleaved in the TCP connection), PLAY, TEARDOWN; on a talking mount, a
// client requiring ONVIF's backchannel also sends its voice (G.711), decoded for the
// delegate's speaker. It knows no camera: its delegate decides who may make each request,
// feeds each media it starts and says who may talk.

import CGStreamerShim
import SystemSupport

public enum RTSPDecision: Sendable, Equatable {
    case allow
    /// Answered with `status` (401, 403, 429) and a WWW-Authenticate header per challenge.
    case refuse(status: Int, challenges: [String])
}

public protocol RTSPServerDelegate: AnyObject, Sendable {
    /// Each request, before the server acts on it (called only when the server was started
    /// with `authenticate`); `talk`: it requires ONVIF's backchannel (the client would talk).
    func authorize(method: String, uri: String, authorization: String?, address: String, talk: Bool) -> RTSPDecision
    /// Before DESCRIBE of `path`: whether it is served, and with what sound.
    func describe(_ path: String) -> RTSPMedia
    /// The shared media of `path` starts: push into `feed` (and its sound into `sound`, when
    /// the DESCRIBE that built it gave one) until it closes.
    func mediaStarted(path: String, feed: H264Feed, sound: AudioFeed?)
    /// A DESCRIBE of a talking mount's `path` requiring ONVIF's backchannel: whether the
    /// client may talk, and to what.
    func talk(path: String) -> RTSPTalk
}

public enum RTSPTalk: Sendable {
    /// Answered with `status` (503: someone talks already; 551: nothing to talk to).
    case refuse(status: Int)
    /// The client's voice goes to `talker` until its media ends.
    case accept(RTSPTalker)
}

/// Where a talk's voice goes: `play` gets it decoded (48 kHz mono, on the media's streaming
/// thread) until `end`, called once when the talk is over.
public struct RTSPTalker: Sendable {
    public let play: @Sendable (UnsafeBufferPointer<Int16>) -> Void
    public let end: @Sendable () -> Void
    public init(play: @escaping @Sendable (UnsafeBufferPointer<Int16>) -> Void, end: @escaping @Sendable () -> Void) {
        self.play = play
        self.end = end
    }
}

public enum RTSPMedia: Sendable, Equatable {
    /// Answered with `status` (404, 503).
    case refuse(status: Int)
    /// Served: the picture, and the sound when there is some.
    case serve(sound: AACFormat?)
}

public final class RTSPServer: @unchecked Sendable {  // `raw` is set once; gst-rtsp-server locks itself
    private let raw: OpaquePointer
    private let context: Unmanaged<Box>

    private final class Box {
        let delegate: RTSPServerDelegate
        init(_ delegate: RTSPServerDelegate) { self.delegate = delegate }
    }

    /// A talk's talker, retained from `talk_begin` to `talk_end`.
    private final class TalkerBox {
        let talker: RTSPTalker
        init(_ talker: RTSPTalker) { self.talker = talker }
    }

    /// Listens on `address`:`port` (0: any free port); `authenticate` asks the delegate about
    /// every request.
    public init(address: String, port: Int, clientThreads: Int = 8, authenticate: Bool,
                delegate: RTSPServerDelegate) throws(StreamingError) {
        try GStreamer.start()
        context = Unmanaged.passRetained(Box(delegate))
        let callbacks = vfg_rtsp_callbacks(
            context: context.toOpaque(),
            authorize: { context, method, uri, authorization, address, talk, challenge, length in
                let box = Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue()
                let decision = box.delegate.authorize(
                    method: String(cString: method!), uri: String(cString: uri!),
                    authorization: authorization.map { String(cString: $0) }, address: String(cString: address!), talk: talk != 0)
                guard case .refuse(let status, let challenges) = decision else { return 0 }
                let text = Array(challenges.joined(separator: "\n").utf8.prefix(length - 1)) + [0]
                text.withUnsafeBufferPointer { b in
                    challenge!.withMemoryRebound(to: UInt8.self, capacity: length) { $0.update(from: b.baseAddress!, count: b.count) }
                }
                return Int32(status)
            },
            describe: { context, path, aac in
                let box = Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue()
                switch box.delegate.describe(String(cString: path!)) {
                case .refuse(let status): return Int32(status)
                case .serve(let sound?) where sound.config.count <= 16:
                    aac!.pointee.rate = Int32(sound.sampleRate)
                    aac!.pointee.channels = Int32(sound.channels)
                    withUnsafeMutableBytes(of: &aac!.pointee.config) { $0.copyBytes(from: sound.config) }
                    aac!.pointee.config_length = sound.config.count
                    return 0
                case .serve: return 0
                }
            },
            media_started: { context, path, feed, sound in
                let box = Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue()
                box.delegate.mediaStarted(path: String(cString: path!), feed: H264Feed(feed!), sound: sound.map(AudioFeed.init))
            },
            talk_begin: { context, path, talk in
                let box = Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue()
                switch box.delegate.talk(path: String(cString: path!)) {
                case .refuse(let status): return Int32(status)
                case .accept(let talker):
                    talk!.pointee = Unmanaged.passRetained(TalkerBox(talker)).toOpaque()
                    return 0
                }
            },
            talk_sound: { talk, samples, count in
                guard let talk, let samples else { return }
                Unmanaged<TalkerBox>.fromOpaque(talk).takeUnretainedValue().talker.play(UnsafeBufferPointer(start: samples, count: count))
            },
            talk_end: { talk in
                guard let talk else { return }
                let box = Unmanaged<TalkerBox>.fromOpaque(talk)
                box.takeUnretainedValue().talker.end()
                box.release()
            })
        var error = [CChar](repeating: 0, count: 256)
        guard let raw = vfg_rtsp_start(address, String(port), Int32(clientThreads), authenticate ? 1 : 0, callbacks, &error, error.count) else {
            context.release()
            throw .listen(GStreamer.message(error))
        }
        self.raw = raw
    }

    /// The port it listens on (the one chosen when asked for 0).
    public var port: Int { Int(vfg_rtsp_port(raw)) }

    /// Serves `path` ("/rear"): H.264 (and AAC), or `jpeg` pictures (RFC 2435's RTP/JPEG:
    /// baseline, 4:2:0 or 4:2:2, at most 2040 px a side); with `talk`, a client may talk back
    /// (ONVIF's backchannel, through the delegate's `talk`). False when it is served already.
    @discardableResult
    public func mount(_ path: String, jpeg: Bool = false, talk: Bool = false) -> Bool {
        (jpeg ? vfg_rtsp_mount_jpeg(raw, path) : vfg_rtsp_mount(raw, path, talk ? 1 : 0)) == 0
    }

    /// Clients connected now.
    public var clientCount: Int { Int(vfg_rtsp_clients(raw)) }

    private let stopped = Locked(false)

    /// Closes the socket and every client's session.
    public func stop() {
        guard stopped.withLock({ s in defer { s = true }; return !s }) else { return }
        vfg_rtsp_stop(raw)
        context.release()
    }

    deinit { stop() }
}
