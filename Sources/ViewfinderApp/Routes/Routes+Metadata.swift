// The synthetic camera's scene over HTTP, where a test (or a demo) puts the codes for the
// metadata output to find. (The metadata call itself is a row of the session table.)

import Barcodes
import CameraCore
import Capture
import HTTPServer
import Session
import SystemSupport

/// The scene as `GET /api/cameras/{id}/scene` answers it.
struct SceneJSON: Encodable {
    struct Walker: Encodable {
        var duration: Double, size: Double, startsAt: Double, endsAt: Double
    }
    var codes: [SceneCode]
    var moving: Bool
    var walker: Walker?

    init(_ camera: SyntheticCamera) {
        codes = camera.sceneCodes
        moving = camera.staging.moving
        walker = camera.staging.walker.map { Walker(duration: $0.duration, size: $0.size, startsAt: $0.startsAt, endsAt: $0.endsAt) }
    }

    private enum CodingKeys: String, CodingKey { case codes, moving, walker }

    /// `walker` is spelled out as null when none is staged.
    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(codes, forKey: .codes)
        try c.encode(moving, forKey: .moving)
        try c.encode(walker, forKey: .walker)
    }
}

extension Application {
    /// `GET|POST /api/cameras/{id}/scene`: the codes a synthetic camera shows, and what is
    /// staged in its scene (its own motion held or not, a walker).
    func addSceneRoutes(_ r: inout Router) {
        r.get("/api/cameras/:id/scene") { [self] request in json(SceneJSON(try syntheticCamera(request))) }
        r.post("/api/cameras/:id/scene") { [self] request in
            let camera = try syntheticCamera(request)
            let scene = try SceneBody(reading: try bodyObject(request))
            if let codes = scene.codes { try camera.setSceneCodes(codes) }
            if let moving = scene.moving { camera.staging.moving = moving }
            if let walker = scene.walker {
                camera.staging.walker = walker.map { SceneWalker(startsAt: Clock.now() + $0.after, duration: $0.duration, size: $0.size) }
            }
            return json(SceneJSON(camera))
        }
    }

    private func syntheticCamera(_ request: Request) throws -> SyntheticCamera {
        let id = request.parameters["id"] ?? ""
        let session = try cameras.session(id)
        guard let camera = (session.camera.descriptor.id == id ? session.camera : nil) as? SyntheticCamera else {
            throw HTTPError(409, "not_synthetic", "Camera '\(id)' is not synthetic: only the synthetic camera's scene can be set.")
        }
        return camera
    }
}
