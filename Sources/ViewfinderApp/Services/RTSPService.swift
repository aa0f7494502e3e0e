// The RTSP side of the application: `rtsp://host:8554/<camera-id>` for each camera and
// `/main` following the main session, each one shared media fed from the camera's LiveHub;
// `/<camera-id>/sub` and `/main/sub` the same for the sub stream; `/<camera-id>/jpeg` and
// `/main/jpeg` the preview's own JPEG pictures as RTP/JPEG (RFC 2435: ONVIF Profile S's
// mandatory stream), from the camera's preview hub — the pictures MJPEG viewers get.
// A camera with a speaker takes a talker's voice on its H.264 paths (ONVIF's backchannel,
// the speaker claimed from TalkService as WHIP's talkers claim it: one talker a camera).
// The server (Streaming's RTSPServer) knows no camera; this delegate answers its questions.

import Auth
import Logging
import Movie
import Session
import Streaming
import SystemSupport

final class RTSPService: RTSPServerDelegate {
    private let cameras: MultiCamSession
    private let talks: TalkService
    private let access: AccessControl
    private let nonces = NonceIssuer()
    private let isFull: @Sendable () -> Bool
    private let feeders = Locked<[ObjectIdentifier: FeedPump]>([:])
    /// The sound each path's last DESCRIBE offered: what its media's AAC stream is made of.
    private let described = Locked<[String: AudioTrackInfo]>([:])
    private let logger: Logger

    /// `full` says whether the live clients are at `live.maxClients`.
    init(cameras: MultiCamSession, talks: TalkService, access: AccessControl, full: @escaping @Sendable () -> Bool, logger: Logger) {
        self.cameras = cameras
        self.talks = talks
        self.access = access
        self.isFull = full
        self.logger = logger
    }

    /// The paths served: each camera's id, and "main", each also with "/sub"; and the JPEG ones.
    var paths: [String] {
        let main = ["/main"] + cameras.sessions.map { "/" + $0.id }
        return main + main.map { $0 + "/sub" }
    }

    /// Whether `path` (one of `paths`) takes a talker: its camera has a speaker (for "/main",
    /// some camera has: the main one's is claimed when a talker comes).
    func talks(_ path: String) -> Bool {
        let camera = Self.split(path).camera
        if camera == "main" { return cameras.sessions.contains { talks.speaker(of: $0.id) != nil } }
        return talks.speaker(of: camera) != nil
    }

    /// The RTP/JPEG paths: each camera's id, and "main", with "/jpeg".
    var jpegPaths: [String] { (["/main"] + cameras.sessions.map { "/" + $0.id }).map { $0 + "/jpeg" } }

    /// RFC 2435 gives a picture's width and height in units of 8 pixels, in one byte each.
    static let largestJPEG = 2040

    func authorize(method: String, uri: String, authorization: String?, address: String, talk: Bool) -> RTSPDecision {
        access.rtspDecision(method: method, uri: uri, authorization: authorization, address: address, talk: talk, nonces: nonces)
    }

    func describe(_ path: String) -> RTSPMedia {
        guard let session = session(path) else { return .refuse(status: 404) }
        guard session.isCapturing else { return .refuse(status: 503) }  // not started: DESCRIBE would wait for a first frame
        guard !isFull() else { return .refuse(status: 503) }
        if Self.isJPEG(path) {
            // What RTP/JPEG cannot carry: a picture over 2040 px a side (415, as for a format).
            guard let size = session.pictureSize else { return .refuse(status: 503) }
            guard size.width <= Self.largestJPEG, size.height <= Self.largestJPEG else { return .refuse(status: 415) }
            return .serve(sound: nil)
        }
        // Sound on a camera's own paths: /main follows a switch, which a media's SDP cannot.
        guard !path.hasPrefix("/main"), let track = session.soundTrack(.aac) else { return .serve(sound: nil) }
        described.withLock { $0[path] = track }
        return .serve(sound: AACFormat(sampleRate: track.sampleRate, channels: track.channels, config: track.extradata))
    }

    func mediaStarted(path: String, feed: H264Feed, sound: AudioFeed?) {
        let cameras = self.cameras
        let source: SessionFeed
        let (camera, stream) = Self.split(path)
        if camera == "main" {
            source = cameras.mainFeed
        } else if let s = session(path) {
            source = SessionFeed(s)
        } else {
            return
        }
        // The sound, pumped into its appsrc on the microphone's thread (a push only queues),
        // until the picture's pump stops: the media is gone.
        let listening = Self.isJPEG(path) ? nil : sound.flatMap { sound in
            described.withLock { $0[path] }.flatMap { track in
                session(path)?.subscribeSound(track).map { FeedPump(feed: sound, sound: $0) { ($0.bytes, $0.time) } }
            }
        }
        let box = Locked<ObjectIdentifier?>(nil)
        let stopped = { @Sendable [feeders] in
            listening?.stop()
            if let id = box.withLock({ $0 }) { feeders.withLock { _ = $0.removeValue(forKey: id) } }
        }
        let feeder = Self.isJPEG(path) ? FeedPump(feed: feed, pictures: source.previewPictures(), onStop: stopped)
                                       : FeedPump(feed: feed, units: source.liveUnits(stream, kind: "rtsp"), onStop: stopped)
        box.withLock { $0 = ObjectIdentifier(feeder) }
        feeders.withLock { $0[ObjectIdentifier(feeder)] = feeder }
        feeder.start()
        listening?.start()
        logger.info("RTSP \(path): streaming\(listening == nil ? "" : " with sound")")
    }

    func talk(path: String) -> RTSPTalk {
        guard let camera = session(path)?.id else { return .refuse(status: 404) }
        let claim: SpeakerClaim
        do throws(SpeakerRefusal) { claim = try talks.claim(camera) } catch {
            switch error {
            case .none: return .refuse(status: 551)  // Option not supported: this camera has nothing to talk to
            case .busy:
                logger.info("RTSP \(path): a talker refused: someone talks to camera \(camera)")
                return .refuse(status: 503)
            case .unavailable(_, let device, let why):
                logger.warning("RTSP \(path): a talker refused: the speaker \(device) cannot play: \(why)")
                return .refuse(status: 503)
            }
        }
        logger.info("camera \(camera): talk over RTSP (\(path)) began")
        let logger = self.logger
        return .accept(RTSPTalker(play: { claim.play($0) }, end: {
            claim.end()
            logger.info("camera \(camera): talk over RTSP (\(path)) ended")
        }))
    }

    func stopAll() {
        for f in feeders.withLock({ f in defer { f.removeAll() }; return Array(f.values) }) { f.stop() }
    }

    private func session(_ path: String) -> CaptureSession? {
        let id = Self.split(path).camera
        if id == "main" { return cameras.main }
        return try? cameras.session(id)
    }

    static func isJPEG(_ path: String) -> Bool { path.hasSuffix("/jpeg") }

    /// "/rear/sub" → ("rear", .sub); "/rear" → ("rear", .main) ("/rear/jpeg": the preview's).
    static func split(_ path: String) -> (camera: String, stream: LiveStreamName) {
        let parts = path.split(separator: "/")
        let stream: LiveStreamName = parts.count == 2 && parts[1] == "sub" ? .sub : .main
        return (parts.first.map(String.init) ?? "", stream)
    }
}
