// The photo output over HTTP: POST …/capture on every session's path, and the stored photos
// from every camera, each recording the camera that took it.

import CameraCore
import HTTPServer
import Session
import SystemSupport

extension Application {
    func addPhotoRoutes(_ r: inout Router) {
        // `?set=ID`: this host's photos of one synchronized set.
        r.get("/api/photos") { [self] request in
            if let set = request.query["set"] { return json(["photos": photos.list(set: set).map(PhotoJSON.init)]) }
            return json(["photos": photos.list().map(PhotoJSON.init)])
        }
        r.get("/api/photos/:id") { [self] request in
            let id = request.parameters["id"] ?? ""
            guard let bytes = photos.read(id) else { throw Self.unknownPhoto(id) }
            return Response(status: 200, contentType: "image/jpeg", bytes: bytes,
                            headers: [("Cache-Control", "private, max-age=31536000, immutable")])
        }
        r.post("/api/photos/:id/keep") { [self] request in
            let id = request.parameters["id"] ?? ""
            let body = try KeepBody(reading: try bodyObject(request))
            guard let info = photos.setKeep(id, body.keep) else { throw Self.unknownPhoto(id) }
            return json(PhotoJSON(info))
        }
        r.delete("/api/photos/:id") { [self] request in
            let id = request.parameters["id"] ?? ""
            guard photos.delete(id) else { throw Self.unknownPhoto(id) }
            return Response(status: 204)
        }
    }

    /// POST …/capture: options in the body or the query (`quality`, `store`).
    func capture(_ request: Request, _ lookup: SessionLookup) async throws -> Response {
        var session = try lookup(request)
        let options = try CaptureOptions(request)
        // A prepare or switch that replaces the pipeline answers its waiting photos with no
        // frame at once; the session is then running again at the new format (after a
        // switch, the main session is another camera's: looked up again), so the photo is
        // asked again (the soak caught a 504 here, 7 ms after the request). Only a wait
        // that ran out is a timeout.
        let deadline = Clock.monotonic() + 5
        var taken: EncodedFrame?
        while taken == nil, Clock.monotonic() < deadline {
            session = try lookup(request)
            let ticket = try await session.capture(quality: options.quality)
            taken = await ticket.frame(timeout: max(0.1, deadline - Clock.monotonic()))
        }
        guard let frame = taken else { throw SessionError.captureTimeout }
        let headers = [("X-Frame-Sequence", String(frame.sequence)), ("X-Capture-Timestamp", frame.timestampString)]
        guard options.store else {
            return Response(status: 200, contentType: "image/jpeg", bytes: frame.jpeg, headers: headers + Response.noCache)
        }
        let info = try photos.save(frame, camera: session.id)
        await session.announcePhoto(info)
        let photo = PhotoJSON(info)
        return json(photo, status: 201, headers: [("Location", photo.url)] + headers)
    }

    private static func unknownPhoto(_ id: String) -> HTTPError {
        HTTPError(404, "unknown_photo", "No photo '\(id)'; GET /api/photos lists them.")
    }
}
