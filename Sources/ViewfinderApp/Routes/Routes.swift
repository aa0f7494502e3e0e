// The HTTP API of docs/API.md as a table: each route names its path, reads its body, makes
// one call and answers. Handlers throw; the server maps what they throw once, at dispatch
// (ErrorMapping.swift) — no route catches to translate.

import Auth
import CameraCore
import HTTPServer
import ONVIF
import Session
import SystemSupport

/// Which session a route addresses: the main one, or the camera named in the path.
typealias SessionLookup = @Sendable (Request) throws(SessionError) -> CaptureSession

extension Application {
    func makeRouter() -> Router {
        var r = Router()
        let cameras = self.cameras
        let main: SessionLookup = { _ in cameras.main }
        let named: SessionLookup = { request throws(SessionError) in try cameras.session(request.parameters["id"] ?? "") }

        r.get("/healthz") { _ in json(["status": "ok"]) }
        // Who the page is talking as: it disables the controls for a viewer.
        r.get("/api/me") { [access] request in
            json(Me(name: request.principal?.name.isEmpty == false ? request.principal?.name : nil,
                    role: request.principal?.role ?? "operator", authentication: access.settings.mode == .accounts))
        }
        r.get("/metrics") { [self] _ in await metrics() }
        r.get("/api/cameras") { [self] request in json(CameraList(cameras: await cameraList(), encoders: encoders.entries, services: services(request))) }
        r.get("/api/events") { [self] request in try await events(request) }
        addStateRoutes(&r)

        addSessionRoutes(&r, "/api/session", main, isMain: true)
        addSessionRoutes(&r, "/api/cameras/:id/session", named, isMain: false)
        route(&r, "/api/session/switch", main) { (_, b: SwitchBody) in try await cameras.switchMain(to: b.camera) }
        addPhotoRoutes(&r)
        r.post("/api/fleet/capture") { [self] request in
            let body = try FleetBody(reading: try bodyObject(request))
            guard let fleet = mqtt.withLock({ $0 })?.fleet else {
                throw HTTPError(409, "fleet_unavailable", "A fleet capture needs the broker: set mqtt.url (and leave mqtt.fleet on).")
            }
            let command = fleet.start(delay: body.delay, set: body.set)
            return json(FleetStarted(set: command.set, at: command.at, replies: fleet.topics.fleetReplies(command.set),
                                     photos: "/api/photos?set=\(command.set)"), status: 202)
        }
        addMovieRoutes(&r)
        addSceneRoutes(&r)

        // Preview, with mjpg-streamer's `/?action=` aliases that OctoPrint and HA expect.
        r.get("/stream") { [self] request in try stream(request, main, followsMain: true) }
        r.get("/snapshot") { [self] request in try await snapshot(request, main) }
        r.get("/cameras/:id/stream") { [self] request in try stream(request, named) }
        r.get("/cameras/:id/snapshot") { [self] request in try await snapshot(request, named) }
        // Live H.264: fragmented MP4 (MSE, ffplay, VLC) and WebRTC (WHEP).
        addLiveRoutes(&r, main: main, named: named)
        addAudioRoutes(&r, main: main, named: named)
        addTalkRoutes(&r, main: main, named: named)
        r.get("/") { [self] request in try await actionAlias(request, main) }
        if configuration.onvif.enabled { addONVIFRoutes(&r) }
        return r
    }

    /// ONVIF's SOAP services (issue 39): `POST /onvif/device_service`, `/onvif/media_service`,
    /// `/onvif/events_service`, and each subscription's `/onvif/subscriptions/<id>`. Open at the
    /// HTTP gate: the sign-in is in the SOAP header (ONVIFService.swift).
    private func addONVIFRoutes(_ r: inout Router) {
        let feed = ONVIFMotionFeed(events: cameras.events, cameras: cameras.sessions.map(\.id), broker: onvifEvents)
        let push = PushDelivery(post: CurlPost.post(), clock: { SystemSupport.Clock.now() }) { [logger] consumer, failure in
            if let failure { logger.warning("ONVIF push subscription: \(failure); its notifications are dropped until it answers") }
            else { logger.info("ONVIF push subscription: \(consumer) takes notifications again") }
        }
        let onvif = ONVIFServer(device: ONVIFService(cameras: cameras, configuration: configuration, rtspPort: { [weak self] in self?.rtspPort }),
                                events: feed.broker, push: push, presets: ptzPresets, gate: onvifGate(nonces: NonceMemory()))
        let answer = { @Sendable [self] (request: Request, subscription: Int?) async -> Response in
            let context = ONVIFContext(host: reachedAt(request),
                                       secure: configuration.server.tls != nil, remoteAddress: request.remoteAddress,
                                       now: SystemSupport.Clock.now(), subscription: subscription,
                                       signedIn: request.principal.map { $0.role == Role.operator.rawValue ? .operate : .read })
            _ = feed  // the feed lives as long as the routes
            let answer = await onvif.handle(request.body, context: context)
            var response = Response(status: answer.status, contentType: ONVIFAnswer.contentType, bytes: answer.body)
            if answer.challenge { response.challenge = access.challenge(stale: false) }
            return response
        }
        r.post("/onvif/:service") { request in
            guard ONVIFServer.paths.contains(request.parameters["service"] ?? "") else { throw ServerRefusal.notFound(path: request.path) }
            return await answer(request, nil)
        }
        r.post("/onvif/subscriptions/:id") { request in
            guard let id = Int(request.parameters["id"] ?? ""), id > 0 else { throw ServerRefusal.notFound(path: request.path) }
            return await answer(request, id)
        }
    }

    /// An extra listener (`server.listen[]`): one camera as `/?action=stream` and
    /// `/?action=snapshot`, `/stream`, `/snapshot` (and `/healthz`), behind the same sign-in.
    func makeListenerRouter(camera id: String) -> Router {
        var r = Router()
        let lookup: SessionLookup = { [cameras] _ throws(SessionError) in try cameras.session(id) }
        r.get("/healthz") { _ in json(["status": "ok"]) }
        r.get("/stream") { [self] request in try stream(request, lookup) }
        r.get("/snapshot") { [self] request in try await snapshot(request, lookup) }
        r.get("/") { [self] request in
            switch request.query["action"] {
            case "stream": return try stream(request, lookup)
            case "snapshot": return try await snapshot(request, lookup)
            default: throw ServerRefusal.notFound(path: "/")
            }
        }
        return r
    }

    /// `/?action=stream` and `snapshot` for the main camera, `stream_N` and `snapshot_N` for
    /// the Nth of /api/cameras (mjpg-streamer's multi-input form); else the page.
    private func actionAlias(_ request: Request, _ main: @escaping SessionLookup) async throws -> Response {
        let action = request.query["action"] ?? ""
        for (prefix, isStream) in [("stream", true), ("snapshot", false)] where action == prefix || action.hasPrefix(prefix + "_") {
            var lookup = main, followsMain = true
            if action != prefix {
                let n = action.dropFirst(prefix.count + 1)
                guard n.allSatisfy({ $0.isASCII && $0.isNumber }), let i = Int(n), cameras.sessions.indices.contains(i) else {
                    throw SessionError.unknownCamera("\(prefix)_\(n)", known: cameras.sessions.indices.map { "\(prefix)_\($0)" })
                }
                let s = cameras.sessions[i]
                lookup = { _ in s }
                followsMain = false
            }
            return isStream ? try stream(request, lookup, followsMain: followsMain) : try await snapshot(request, lookup)
        }
        guard let page = staticFiles.response(for: "/index.html") else { throw ServerRefusal.notFound(path: "/") }
        return page
    }

    /// POST `path`: reads the body as `B`, makes `call` on the session `lookup` names, and
    /// answers its state (saying whether it is the main session's).
    func route<B: RequestBody>(_ r: inout Router, _ path: String, _ lookup: @escaping SessionLookup,
                               _ call: @escaping @Sendable (CaptureSession, B) async throws -> SessionState) {
        let cameras = self.cameras
        r.post(path) { request in
            let reader = try bodyObject(request)
            let session = try lookup(request)
            return json(cameras.marked(try await call(session, try B(reading: reader))))
        }
    }

    /// The host and port the client reached us at: its Host header, else where HTTP listens.
    private func reachedAt(_ request: Request) -> String {
        request.headers["host"] ?? "\(configuration.server.host):\(server?.port ?? configuration.server.port)"
    }

    private func services(_ request: Request) -> Services {
        let host = reachedAt(request)
        let onvif = configuration.onvif.enabled
        return Services(rtsp: rtspPort, onvif: Services.ONVIF(
            enabled: onvif, deviceService: onvif ? "\(configuration.server.tls != nil ? "https" : "http")://\(host)/onvif/device_service" : nil,
            discovery: discoveryStatus.withLock { $0 }))
    }

    private func cameraList() async -> [CameraInfo] {
        var list: [CameraInfo] = []
        for s in cameras.sessions {
            let d = s.camera
            let state = await s.state()
            list.append(CameraInfo(id: d.descriptor.id, name: d.descriptor.name, position: d.descriptor.position.rawValue,
                                   kind: d.descriptor.kind.rawValue, device: d.descriptor.device, available: true,
                                   formats: d.formats, capabilities: d.capabilities,
                                   state: state.state.rawValue, main: s === cameras.main, live: state.live,
                                   audio: s.microphone(of: d.descriptor.id).map { mic in
                                       switch mic.capabilities {
                                       case .success(let caps): CameraInfo.AudioInfo(device: mic.device, capabilities: caps)
                                       case .failure(let e): CameraInfo.AudioInfo(device: mic.device, error: e.description)
                                       }
                                   },
                                   speaker: talk.speaker(of: d.descriptor.id).map { speaker in
                                       CameraInfo.SpeakerInfo(device: speaker.name, talking: talk.isTalking(d.descriptor.id))
                                   }))
        }
        return list
    }

    /// `GET /api/events[?camera=ID][&levels=1]`: every camera's events, or one camera's; with
    /// `levels`, the microphones' level readings too (ten a second each).
    private func events(_ request: Request) async throws -> Response {
        let cameras = self.cameras, only = request.query["camera"]
        let first = try only.map { id throws(SessionError) in try cameras.session(id) } ?? cameras.main
        // Each state says whether its camera is the main one at the time it is sent.
        let levels = ["1", "true"].contains(request.query["levels"] ?? "")
        let events = cameras.events.subscription(initial: [.state(await cameras.state(of: first))], camera: only, levels: levels)
            .map { ServerSentEvent.Message(event: $0.name, data: cameras.marked($0).json) }
        return Response(headers: [("Content-Type", "text/event-stream"), ("X-Accel-Buffering", "no")] + Response.noCache,
                        body: .stream(ServerSentEventStream(events)))
    }
}
