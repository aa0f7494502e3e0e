// The synthetic camera's scene over HTTP, where a test (or a demo) puts the codes for the
// metadata output to find. (The metadata call itself is a row of the session table.)

import Barcodes
import CameraCore
import Capture
import HTTPServer
import Session

extension Application {
    /// `GET|POST /api/cameras/{id}/scene`: the codes a synthetic camera shows.
    func addSceneRoutes(_ r: inout Router) {
        r.get("/api/cameras/:id/scene") { [self] request in json(["codes": try syntheticCamera(request).sceneCodes]) }
        r.post("/api/cameras/:id/scene") { [self] request in
            let camera = try syntheticCamera(request)
            let scene = try SceneBody(reading: try bodyObject(request))
            try camera.setSceneCodes(scene.codes)
            return json(["codes": camera.sceneCodes])
        }
    }

    private func syntheticCamera(_ request: Request) throws -> SyntheticCamera {
        let id = request.parameters["id"] ?? ""
        let session = try cameras.session(id)
        guard let camera = session.cameras.first(where: { $0.descriptor.id == id }) as? SyntheticCamera else {
            throw HTTPError(409, "not_synthetic", "Camera '\(id)' is not synthetic: only the synthetic camera's scene can be set.")
        }
        return camera
    }
}
