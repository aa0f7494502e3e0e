// The live picture: MJPEG viewers and snapshots of a camera's newest preview frame.

import CameraCore
import HTTPServer
import Session
import SystemSupport

extension Application {
    /// A viewer of `lookup`'s camera. The main session's viewers follow it when it moves
    /// to another camera (as AVCaptureVideoPreviewLayer follows its session).
    func stream(_ request: Request, _ lookup: SessionLookup, followsMain: Bool = false) throws -> Response {
        let session = try lookup(request)
        // No stream.maxFps: the camera's own rate, as µStreamer and mjpg-streamer stream.
        let cap = configuration.stream.maxFps.map(Double.init) ?? .infinity
        let asked = request.query["fps"].flatMap(Double.init).flatMap { $0.isFinite && $0 > 0 ? $0 : nil }
        let feed = followsMain ? cameras.mainFeed : SessionFeed(session)
        let fps = min(asked ?? cap, cap)
        return Response(headers: [("Content-Type", Multipart.contentType)] + Response.noCache,
                        body: .stream(feed.preview(maxFps: fps.isFinite ? fps : 0)))
    }

    /// The latest preview frame if it is fresh, else the next one (the camera encodes it on
    /// demand); the placeholder, flagged offline, when nothing is captured.
    func snapshot(_ request: Request, _ lookup: SessionLookup) async throws -> Response {
        let session = try lookup(request)
        let hub = session.hub
        var frame = hub.latestFrame
        if await session.isRunning, frame == nil || !frame!.online || Clock.now() - frame!.timestamp > 0.2 {
            frame = await hub.nextFrame(after: frame?.sequence ?? 0, timeout: 3) ?? hub.latestFrame
        }
        if frame == nil {
            await session.ensurePreviewFrame()
            frame = hub.latestFrame
        }
        guard let frame else { throw SessionError.camera(.unavailable("no frame yet")) }
        return Response(status: 200, contentType: "image/jpeg", bytes: frame.jpeg,
                        headers: Response.noCache + [("X-Timestamp", frame.timestampString),
                                                     ("X-Frame-Sequence", String(frame.sequence)),
                                                     ("X-Viewfinder-Camera", session.id),
                                                     ("X-Viewfinder-Online", frame.online ? "true" : "false")])
    }
}
