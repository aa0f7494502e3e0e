// The session calls, for the main session (`/api/session`) and for each camera's own
// (`/api/cameras/{id}/session`): a table of path → body type → session call. Starting a
// camera's own session keeps it running when the main view moves to another camera; the
// main session's start does not.

import CameraCore
import HTTPServer
import Movie
import Session

extension Application {
    func addSessionRoutes(_ r: inout Router, _ prefix: String, _ lookup: @escaping SessionLookup, isMain: Bool) {
        let cameras = self.cameras
        r.get(prefix) { request in json(await cameras.state(of: try lookup(request))) }

        route(&r, prefix + "/start", lookup) { (s, _: NoOptions) in isMain ? try await s.start() : try await cameras.start(s) }
        route(&r, prefix + "/stop", lookup) { (s, _: NoOptions) in await cameras.stop(s) }
        route(&r, prefix + "/prepare", lookup) { (s, p: PrepareRequest) in try await Self.prepare(p, on: s, cameras, isMain: isMain) }
        route(&r, prefix + "/zoom", lookup) { (s, z: ZoomRequest) in try await s.zoom(z) }
        route(&r, prefix + "/focus", lookup) { (s, f: FocusRequest) in try await s.focus(f) }
        route(&r, prefix + "/exposure", lookup) { (s, e: ExposureRequest) in try await s.exposure(e) }
        route(&r, prefix + "/white-balance", lookup) { (s, w: WhiteBalanceRequest) in try await s.whiteBalance(w) }
        route(&r, prefix + "/torch", lookup) { (s, t: TorchRequest) in try await s.torch(t) }
        route(&r, prefix + "/orientation", lookup) { (s, o: OrientationRequest) in try await s.orientation(o) }
        route(&r, prefix + "/metadata", lookup) { (s, m: MetadataBody) in try await s.setMetadata(types: m.types, rectOfInterest: m.rect) }
        route(&r, prefix + "/motion", lookup) { (s, m: MotionBody) in try await s.setMotion(m.change) }
        route(&r, prefix + "/recording/start", lookup) { (s, o: RecordingOptions) in try await s.startRecording(o) }
        route(&r, prefix + "/recording/frame", lookup) { (s, _: NoOptions) in try await s.addRecordingFrame() }
        r.post(prefix + "/recording/stop") { [self] request in try await stopRecording(request, lookup) }
        r.post(prefix + "/recording") { [self] request in try await recordingSwitch(request, lookup) }

        r.get(prefix + "/controls") { request in json(["controls": try await lookup(request).controls()]) }
        r.post(prefix + "/controls") { request in
            let values = try controlValues(request)
            return json(["controls": try await lookup(request).setControls(values)])
        }
        r.post(prefix + "/capture") { [self] request in try await capture(request, lookup) }
    }

    /// A prepare naming another camera moves the main session there first; a camera's own
    /// session cannot become another camera.
    private static func prepare(_ request: PrepareRequest, on session: CaptureSession, _ cameras: MultiCamSession,
                                isMain: Bool) async throws(SessionError) -> SessionState {
        var p = request, s = session
        if let camera = p.camera, camera != s.id {
            guard isMain else {
                throw .invalidValue("camera: this is camera '\(s.id)'s session; use /api/session/prepare or /api/cameras/\(camera)/session/prepare")
            }
            _ = try cameras.session(camera)
            _ = try await cameras.switchMain(to: camera)
            s = cameras.main
        }
        p.camera = nil
        return isMain ? try await s.prepare(p) : try await cameras.prepare(s, p)
    }
}
