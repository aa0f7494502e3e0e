// The HTTP API of API.md, wired to the session. Handlers parse and validate, call one
// session method, and answer SessionState or a contract error.

import CameraCore
import Foundation
import HTTPServer
import Session
import SystemSupport
import JSON

struct CameraInfo: Encodable {
    var id: String, name: String, position: String, kind: String
    var device: String?
    var available: Bool
    var formats: [FormatOption]
    var capabilities: Capabilities
    /// Its session's run state, and whether that session is the main one.
    var state: String
    var main: Bool

    func encode(to encoder: Encoder) throws {
        enum K: String, CodingKey { case id, name, position, kind, device, available, formats, capabilities, state, main }
        var c = encoder.container(keyedBy: K.self)
        try c.encode(id, forKey: .id); try c.encode(name, forKey: .name)
        try c.encode(position, forKey: .position); try c.encode(kind, forKey: .kind)
        try c.encode(device, forKey: .device)  // explicit null, as the contract shows
        try c.encode(available, forKey: .available)
        try c.encode(formats, forKey: .formats); try c.encode(capabilities, forKey: .capabilities)
        try c.encode(state, forKey: .state); try c.encode(main, forKey: .main)
    }
}

struct Me: Encodable {
    var name: String?
    var role: String
    var authentication: Bool

    func encode(to encoder: Encoder) throws {
        enum K: String, CodingKey { case name, role, authentication }
        var c = encoder.container(keyedBy: K.self)
        try c.encode(name, forKey: .name)  // explicit null without a user
        try c.encode(role, forKey: .role)
        try c.encode(authentication, forKey: .authentication)
    }
}

func json<T: Encodable>(_ value: T, status: Int = 200, headers: [(String, String)] = []) -> Response {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.withoutEscapingSlashes]
    let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
    return Response(status: status, contentType: "application/json", bytes: [UInt8](data), headers: headers)
}

/// Which session a route addresses: the main one, or the camera named in the path.
typealias SessionLookup = @Sendable (Request) throws(SessionError) -> CaptureSession

extension Application {
    func makeRouter() -> Router {
        var r = Router()
        let cameras = self.cameras

        r.get("/healthz") { _ in json(["status": "ok"]) }
        // Who the page is talking as: it disables the controls for a viewer.
        r.get("/api/me") { [access] request in
            json(Me(name: request.principal?.name.isEmpty == false ? request.principal?.name : nil,
                    role: request.principal?.role ?? "operator", authentication: access.settings.mode == .accounts))
        }
        r.get("/metrics") { [self] _ in await metrics() }

        r.get("/api/cameras") { _ in
            var list: [CameraInfo] = []
            for s in cameras.sessions {
                let d = s.cameras[0]
                list.append(CameraInfo(id: d.descriptor.id, name: d.descriptor.name, position: d.descriptor.position.rawValue,
                                       kind: d.descriptor.kind.rawValue, device: d.descriptor.device, available: true,
                                       formats: d.formats, capabilities: d.capabilities,
                                       state: await s.state().state.rawValue, main: s === cameras.main))
            }
            return json(["cameras": list])
        }
        r.get("/api/events") { request in
            let only = request.query["camera"]
            let first: CaptureSession
            if let only {
                do throws(SessionError) { first = try cameras.session(only) } catch { return error.http.response }
            } else {
                first = cameras.main
            }
            let stream = EventStream(events: cameras.events, initial: .state(await cameras.state(of: first)), camera: only,
                                     mark: { cameras.marked($0) })
            return Response(headers: [("Content-Type", "text/event-stream"), ("X-Accel-Buffering", "no")] + Response.noCache,
                            body: .stream(stream))
        }

        let main: SessionLookup = { _ in cameras.main }
        let named: SessionLookup = { request throws(SessionError) in try cameras.session(request.parameters["id"] ?? "") }
        addSessionRoutes(&r, "/api/session", main, isMain: true)
        addSessionRoutes(&r, "/api/cameras/:id/session", named, isMain: false)
        r.post("/api/session/switch") { [self] request in
            await sessionCall(request) { body throws(SessionError) in
                let camera: String?
                do throws(JSONFieldError) { camera = try body.string("camera"); try body.finish() } catch {
                    throw .invalidValue(error.description)
                }
                return try await cameras.switchMain(to: camera)
            }
        }
        addPhotoRoutes(&r)
        addMovieRoutes(&r)
        addSceneRoutes(&r)

        // Preview, with mjpg-streamer's `/?action=` aliases that OctoPrint and HA expect:
        // `stream`/`snapshot` for the main camera, `stream_N`/`snapshot_N` for the Nth of
        // /api/cameras (mjpg-streamer's multi-input form).
        r.get("/stream") { [self] request in stream(request, main, followsMain: true) }
        r.get("/snapshot") { [self] request in await snapshot(request, main) }
        r.get("/cameras/:id/stream") { [self] request in stream(request, named) }
        r.get("/cameras/:id/snapshot") { [self] request in await snapshot(request, named) }
        r.get("/") { [self] request in
            let action = request.query["action"] ?? ""
            for (prefix, isStream) in [("stream", true), ("snapshot", false)] where action == prefix || action.hasPrefix(prefix + "_") {
                var lookup = main, followsMain = true
                if action != prefix {
                    let n = action.dropFirst(prefix.count + 1)
                    guard n.allSatisfy({ $0.isASCII && $0.isNumber }), let i = Int(n), cameras.sessions.indices.contains(i) else {
                        return SessionError.unknownCamera("\(prefix)_\(n)", known: cameras.sessions.indices.map { "\(prefix)_\($0)" }).http.response
                    }
                    let s = cameras.sessions[i]
                    lookup = { _ in s }
                    followsMain = false
                }
                return isStream ? stream(request, lookup, followsMain: followsMain) : await snapshot(request, lookup)
            }
            return staticFiles.response(for: "/index.html") ?? HTTPError.notFound("/").response
        }
        return r
    }

    /// An extra listener (`server.listen[]`): one camera as `/?action=stream` and
    /// `/?action=snapshot`, `/stream`, `/snapshot` (and `/healthz`), behind the same sign-in.
    func makeListenerRouter(camera id: String) -> Router {
        var r = Router()
        let lookup: SessionLookup = { [cameras] _ throws(SessionError) in try cameras.session(id) }
        r.get("/healthz") { _ in json(["status": "ok"]) }
        r.get("/stream") { [self] request in stream(request, lookup) }
        r.get("/snapshot") { [self] request in await snapshot(request, lookup) }
        r.get("/") { [self] request in
            switch request.query["action"] {
            case "stream": return stream(request, lookup)
            case "snapshot": return await snapshot(request, lookup)
            default: return HTTPError.notFound("/").response
            }
        }
        return r
    }

    /// The session calls, for the main session (`/api/session`) and for each camera's own
    /// (`/api/cameras/{id}/session`). Starting a camera's own session keeps it running when
    /// the main view moves to another camera; the main session's start does not.
    func addSessionRoutes(_ r: inout Router, _ prefix: String, _ lookup: @escaping SessionLookup, isMain: Bool) {
        let cameras = self.cameras
        addRecordingRoutes(&r, prefix, lookup)
        addMetadataRoutes(&r, prefix, lookup)
        r.get(prefix) { request in
            do throws(SessionError) { return json(await cameras.state(of: try lookup(request))) } catch { return error.http.response }
        }
        r.post(prefix + "/start") { [self] request in
            await sessionCall(request) { body throws(SessionError) in
                try noOptions(body)
                let s = try lookup(request)
                return isMain ? try await s.start() : try await cameras.start(s)
            }
        }
        r.post(prefix + "/stop") { [self] request in
            await sessionCall(request) { body throws(SessionError) in
                try noOptions(body)
                return await cameras.stop(try lookup(request))
            }
        }
        r.post(prefix + "/prepare") { [self] request in
            await sessionCall(request) { body throws(SessionError) in
                var p: PrepareRequest
                do throws(JSONFieldError) {
                    p = PrepareRequest(camera: try body.string("camera"), preset: try body.string("preset"),
                                       width: try body.int("width", in: 1...16384), height: try body.int("height", in: 1...16384),
                                       fps: try body.int("fps", in: 1...240),
                                       pixelFormat: try body.string("pixelFormat").map { s throws(JSONFieldError) in
                                           guard let f = PixelFormat(rawValue: s) else {
                                               throw JSONFieldError(path: "pixelFormat", problem: "unknown pixel format '\(s)'")
                                           }
                                           return f
                                       })
                    try body.finish()
                } catch { throw .invalidValue(error.description) }
                var s = try lookup(request)
                if let camera = p.camera, camera != s.id {
                    // The main session moves to that camera first; a camera's own session
                    // cannot become another camera.
                    guard isMain else { throw .invalidValue("camera: this is camera '\(s.id)'s session; use /api/session/prepare or /api/cameras/\(camera)/session/prepare") }
                    _ = try cameras.session(camera)
                    _ = try await cameras.switchMain(to: camera)
                    s = try lookup(request)
                }
                p.camera = nil
                return try await s.prepare(p)
            }
        }
        addSettingRoutes(&r, prefix, lookup)
    }
    // MARK: - Preview

    /// A viewer of `lookup`'s camera. The main session's viewers follow it when it moves
    /// to another camera (as AVCaptureVideoPreviewLayer follows its session).
    func stream(_ request: Request, _ lookup: SessionLookup, followsMain: Bool = false) -> Response {
        let session: CaptureSession
        do throws(SessionError) { session = try lookup(request) } catch { return error.http.response }
        let cap = Double(configuration.stream.maxFps)
        let asked = request.query["fps"].flatMap(Double.init).flatMap { $0.isFinite && $0 > 0 ? $0 : nil }
        let feed = followsMain ? cameras.mainFeed : PreviewFeed(session.hub)
        let body = MJPEGStream(feed: feed, maxFps: min(asked ?? cap, cap))
        return Response(headers: [("Content-Type", Multipart.contentType)] + Response.noCache, body: .stream(body))
    }

    /// The latest preview frame if it is fresh, else the next one (the camera encodes it on
    /// demand); the placeholder, flagged offline, when nothing is captured.
    func snapshot(_ request: Request, _ lookup: SessionLookup) async -> Response {
        let session: CaptureSession
        do throws(SessionError) { session = try lookup(request) } catch { return error.http.response }
        let hub = session.hub
        var frame = hub.latestFrame
        if await session.isRunning, frame == nil || !frame!.online || Clock.now() - frame!.timestamp > 0.2 {
            frame = await hub.nextFrame(after: frame?.sequence ?? 0, timeout: 3) ?? hub.latestFrame
        }
        if frame == nil {
            await session.ensurePreviewFrame()
            frame = hub.latestFrame
        }
        guard let frame else { return SessionError.camera(.unavailable("no frame yet")).http.response }
        return Response(status: 200, contentType: "image/jpeg", bytes: frame.jpeg,
                        headers: Response.noCache + [("X-Timestamp", frame.timestampString),
                                                     ("X-Frame-Sequence", String(frame.sequence)),
                                                     ("X-Viewfinder-Camera", session.id),
                                                     ("X-Viewfinder-Online", frame.online ? "true" : "false")])
    }

    // MARK: - Metrics

    func metrics() async -> Response {
        var up = "", encoded = "", clients = "", fps = "", recording = "", metadata = ""
        for s in cameras.sessions {
            let state = await s.state()
            let label = "{camera=\"\(Self.labelValue(s.id))\"}"
            up += "viewfinder_up\(label) \(state.state == .running ? 1 : 0)\n"
            encoded += "viewfinder_frames_encoded_total\(label) \(s.hub.encodedFrames)\n"
            clients += "viewfinder_stream_clients\(label) \(state.stream.clients)\n"
            fps += "viewfinder_stream_fps\(label) \(state.stream.fps)\n"
            let r = state.recording
            recording += "viewfinder_recording_active\(label) \(r.active ? 1 : 0)\n"
                + "viewfinder_recording_frames\(label) \(r.frames)\n"
                + "viewfinder_recording_dropped\(label) \(r.dropped)\n"
                + "viewfinder_recording_bytes\(label) \(r.bytes)\n"
            metadata += "viewfinder_metadata_scans_total\(label) \(s.metadataScans)\n"
                + "viewfinder_metadata_objects\(label) \(state.metadata.objects.count)\n"
        }
        let text = """
        # HELP viewfinder_up 1 while the camera's session is running.
        # TYPE viewfinder_up gauge
        \(up)# HELP viewfinder_frames_encoded_total Frames encoded and published to viewers.
        # TYPE viewfinder_frames_encoded_total counter
        \(encoded)# HELP viewfinder_stream_clients MJPEG viewers connected.
        # TYPE viewfinder_stream_clients gauge
        \(clients)# HELP viewfinder_stream_fps Frames published over the last second.
        # TYPE viewfinder_stream_fps gauge
        \(fps)# HELP viewfinder_recording_active 1 while the camera records a movie; the other recording series describe that movie.
        # TYPE viewfinder_recording_active gauge
        # TYPE viewfinder_recording_frames gauge
        # TYPE viewfinder_recording_dropped gauge
        # TYPE viewfinder_recording_bytes gauge
        \(recording)# HELP viewfinder_metadata_scans_total Frames the metadata output scanned; viewfinder_metadata_objects: codes in view.
        # TYPE viewfinder_metadata_scans_total counter
        # TYPE viewfinder_metadata_objects gauge
        \(metadata)# HELP viewfinder_main_camera 1 for the camera /api/session and /stream address.
        # TYPE viewfinder_main_camera gauge
        viewfinder_main_camera{camera="\(Self.labelValue(cameras.mainID))"} 1
        # HELP viewfinder_http_connections Open HTTP connections.
        # TYPE viewfinder_http_connections gauge
        viewfinder_http_connections \(server?.connectionCount ?? 0)

        """
        return Response(status: 200, contentType: "text/plain; version=0.0.4", bytes: Array(text.utf8))
    }

    /// A Prometheus label value: backslash, quote and newline escaped.
    static func labelValue(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}

/// For calls that take no options: any key is an unknown key.
func noOptions(_ body: JSONObjectReader) throws(SessionError) {
    do throws(JSONFieldError) { try body.finish() } catch { throw .invalidValue(error.description) }
}

extension Application {
    /// Parses the body, runs one session call, answers SessionState (saying whether it is
    /// the main session's) or the error.
    func sessionCall(_ request: Request,
                     _ call: (JSONObjectReader) async throws(SessionError) -> SessionState) async -> Response {
        let body: JSONObjectReader
        do throws(HTTPError) { body = try bodyObject(request) } catch { return error.response }
        do throws(SessionError) {
            return json(cameras.marked(try await call(body)))
        } catch {
            return error.http.response
        }
    }
}
