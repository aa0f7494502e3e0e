// The RTSP side of the application: `rtsp://host:8554/<camera-id>` for each camera and
// `/main` following the main session, each one shared media fed from the camera's LiveHub.
// The server (Streaming's RTSPServer) knows no camera; this delegate answers its questions.

import Auth
import Logging
import Session
import Streaming
import SystemSupport

final class RTSPService: RTSPServerDelegate {
    private let cameras: MultiCamSession
    private let access: AccessControl
    private let nonces = NonceIssuer()
    private let isFull: @Sendable () -> Bool
    private let feeders = Locked<[ObjectIdentifier: LiveFeeder]>([:])
    private let logger: Logger

    /// `full` says whether the live clients are at `live.maxClients`.
    init(cameras: MultiCamSession, access: AccessControl, full: @escaping @Sendable () -> Bool, logger: Logger) {
        self.cameras = cameras
        self.access = access
        self.isFull = full
        self.logger = logger
    }

    /// The paths served: each camera's id, and "main".
    var paths: [String] { ["/main"] + cameras.sessions.map { "/" + $0.id } }

    func authorize(method: String, uri: String, authorization: String?, address: String) -> RTSPDecision {
        access.rtspDecision(method: method, uri: uri, authorization: authorization, address: address, nonces: nonces)
    }

    func refusal(describing path: String) -> Int? {
        guard let session = session(path) else { return 404 }
        guard session.isCapturing else { return 503 }  // not started: DESCRIBE would wait for a first frame
        return isFull() ? 503 : nil
    }

    func mediaStarted(path: String, feed: H264Feed) {
        let cameras = self.cameras
        let source: SessionFeed
        if path == "/main" {
            source = cameras.mainFeed
        } else if let s = session(path) {
            source = SessionFeed(s)
        } else {
            return
        }
        let box = Locked<ObjectIdentifier?>(nil)
        let feeder = LiveFeeder(feed: feed, source: source, kind: "rtsp") { [feeders] in
            if let id = box.withLock({ $0 }) { feeders.withLock { _ = $0.removeValue(forKey: id) } }
        }
        box.withLock { $0 = ObjectIdentifier(feeder) }
        feeders.withLock { $0[ObjectIdentifier(feeder)] = feeder }
        feeder.start()
        logger.info("RTSP \(path): streaming")
    }

    func stopAll() {
        for f in feeders.withLock({ f in defer { f.removeAll() }; return Array(f.values) }) { f.stop() }
    }

    private func session(_ path: String) -> CaptureSession? {
        let id = path.hasPrefix("/") ? String(path.dropFirst()) : path
        if id == "main" { return cameras.main }
        return try? cameras.session(id)
    }
}
