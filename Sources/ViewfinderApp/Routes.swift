// The HTTP API of API.md, wired to the session. Handlers parse and validate, call one
// session method, and answer SessionState or a contract error.

import CameraCore
import Foundation
import HTTPServer
import Session

struct CameraInfo: Encodable {
    var id: String, name: String, position: String, kind: String
    var device: String?
    var available: Bool
    var formats: [FormatOption]
    var capabilities: Capabilities

    func encode(to encoder: Encoder) throws {
        enum K: String, CodingKey { case id, name, position, kind, device, available, formats, capabilities }
        var c = encoder.container(keyedBy: K.self)
        try c.encode(id, forKey: .id); try c.encode(name, forKey: .name)
        try c.encode(position, forKey: .position); try c.encode(kind, forKey: .kind)
        try c.encode(device, forKey: .device)  // explicit null, as the contract shows
        try c.encode(available, forKey: .available)
        try c.encode(formats, forKey: .formats); try c.encode(capabilities, forKey: .capabilities)
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

extension Application {
    func makeRouter() -> Router {
        var r = Router()
        let session = self.session

        r.get("/healthz") { _ in json(["status": "ok"]) }
        // Who the page is talking as: it disables the controls for a viewer.
        r.get("/api/me") { [access] request in
            json(Me(name: request.principal?.name.isEmpty == false ? request.principal?.name : nil,
                    role: request.principal?.role ?? "operator", authentication: access.settings.mode == .accounts))
        }
        r.get("/metrics") { [self] _ in await metrics() }

        r.get("/api/cameras") { _ in
            json(["cameras": session.cameras.map {
                CameraInfo(id: $0.descriptor.id, name: $0.descriptor.name, position: $0.descriptor.position.rawValue,
                           kind: $0.descriptor.kind.rawValue, device: $0.descriptor.device, available: true,
                           formats: $0.formats, capabilities: $0.capabilities)
            }])
        }
        r.get("/api/session") { _ in json(await session.state()) }
        r.get("/api/events") { _ in
            let stream = EventStream(events: session.events, initial: .state(await session.state()))
            return Response(headers: [("Content-Type", "text/event-stream"), ("X-Accel-Buffering", "no")] + Response.noCache,
                            body: .stream(stream))
        }

        r.post("/api/session/start") { request in
            await sessionCall(request) { body throws(SessionError) in
                try noOptions(body)
                return try await session.start()
            }
        }
        r.post("/api/session/stop") { request in
            await sessionCall(request) { body throws(SessionError) in
                try noOptions(body)
                return await session.stop()
            }
        }
        r.post("/api/session/prepare") { request in
            await sessionCall(request) { body throws(SessionError) in
                let p: PrepareRequest
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
                return try await session.prepare(p)
            }
        }
        r.post("/api/session/switch") { request in
            await sessionCall(request) { body throws(SessionError) in
                let camera: String?
                do throws(JSONFieldError) { camera = try body.string("camera"); try body.finish() } catch {
                    throw .invalidValue(error.description)
                }
                return try await session.switchCamera(to: camera)
            }
        }

        addSettingRoutes(&r)

        // Preview, with mjpg-streamer's `/?action=` aliases that OctoPrint and HA expect.
        r.get("/stream") { [self] request in stream(request) }
        r.get("/snapshot") { [self] _ in await snapshot() }
        r.get("/") { [self] request in
            switch request.query["action"] {
            case "stream": return stream(request)
            case "snapshot": return await snapshot()
            default:
                return staticFiles.response(for: "/index.html")
                    ?? HTTPError.notFound("/").response
            }
        }
        return r
    }

    // MARK: - Preview

    func stream(_ request: Request) -> Response {
        let cap = Double(configuration.stream.maxFps)
        let asked = request.query["fps"].flatMap(Double.init).flatMap { $0.isFinite && $0 > 0 ? $0 : nil }
        let body = MJPEGStream(hub: session.hub, parts: parts, maxFps: min(asked ?? cap, cap))
        return Response(headers: [("Content-Type", Multipart.contentType)] + Response.noCache, body: .stream(body))
    }

    /// The latest preview frame if it is fresh, else the next one (the camera encodes it on
    /// demand); the placeholder, flagged offline, when nothing is captured.
    func snapshot() async -> Response {
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
                                                     ("X-Viewfinder-Online", frame.online ? "true" : "false")])
    }

    // MARK: - Metrics

    func metrics() async -> Response {
        let state = await session.state()
        let text = """
        # HELP viewfinder_up 1 while the session is running.
        # TYPE viewfinder_up gauge
        viewfinder_up \(state.state == .running ? 1 : 0)
        # HELP viewfinder_frames_encoded_total Frames encoded and published to viewers.
        # TYPE viewfinder_frames_encoded_total counter
        viewfinder_frames_encoded_total \(session.hub.encodedFrames)
        # HELP viewfinder_stream_clients MJPEG viewers connected.
        # TYPE viewfinder_stream_clients gauge
        viewfinder_stream_clients \(state.stream.clients)
        # HELP viewfinder_stream_fps Frames published over the last second.
        # TYPE viewfinder_stream_fps gauge
        viewfinder_stream_fps \(state.stream.fps)
        # HELP viewfinder_http_connections Open HTTP connections.
        # TYPE viewfinder_http_connections gauge
        viewfinder_http_connections \(server?.connectionCount ?? 0)

        """
        return Response(status: 200, contentType: "text/plain; version=0.0.4", bytes: Array(text.utf8))
    }
}

/// For calls that take no options: any key is an unknown key.
private func noOptions(_ body: JSONObjectReader) throws(SessionError) {
    do throws(JSONFieldError) { try body.finish() } catch { throw .invalidValue(error.description) }
}

/// Parses the body, runs one session call, answers SessionState or the error.
func sessionCall(_ request: Request,
                         _ call: (JSONObjectReader) async throws(SessionError) -> SessionState) async -> Response {
    let body: JSONObjectReader
    do throws(HTTPError) { body = try bodyObject(request) } catch { return error.response }
    do throws(SessionError) {
        return json(try await call(body))
    } catch {
        return error.http.response
    }
}
