// Composition: configuration → cameras → one session per camera (MultiCamSession) → router
// → server (and the extra one-camera listeners). Start and stop in one place, so main.swift
// and the live tests run exactly the same thing.

import Auth
import CameraCore
import Capture
import Foundation
import HTTPServer
import Logging
import MQTT
import Movie
import ONVIF
import Session
import Streaming
import SystemSupport

public final class Application: Sendable {
    public let configuration: Configuration
    /// Every camera's session; `/api/session` addresses its main one.
    public let cameras: MultiCamSession
    /// The main session (what single-camera clients address).
    public var session: CaptureSession { cameras.main }
    let staticFiles: StaticFiles
    let photos: PhotoStore
    let movies: MovieStore
    /// The live H.264 encoders every camera's streams are made by, probed at start.
    let encoders: LiveEncoderChain
    /// Deletes the oldest movies and photos past `storage`'s limits (nil: no limits).
    let retention: StorageRetention?
    /// The broker's side of this host, while it runs (`mqtt.url`).
    let mqtt = Locked<MQTTBridge?>(nil)
    let access: AccessControl
    private let running = Locked<[HTTPServer]>([])
    /// The main listener (server.host:server.port).
    var server: HTTPServer? { running.withLock { $0.first } }
    /// The bound ports of `server.listen`, in its order.
    public var listenerPorts: [Int] { running.withLock { $0.dropFirst().map(\.port) } }
    let logger: Logger
    /// WebRTC peers by WHEP session.
    let whep: WHEPService
    let talk: TalkService
    /// The STUN/TURN servers: the peers' own, and what a viewer is handed (credentials minted).
    let ice: ICEServers
    /// Open live.mp4 streams: each is its camera's live hub's client from its request on.
    var liveMP4Count: Int {
        cameras.sessions.reduce(0) { n, s in LiveStreamName.allCases.reduce(n) { $0 + (s.live($1).clientCounts["mp4"] ?? 0) } }
    }
    private let rtsp = Locked<(server: RTSPServer, service: RTSPService)?>(nil)
    /// The RTSP server's port (the one picked for port 0), or nil when it does not run.
    public var rtspPort: Int? { rtsp.withLock { $0?.server.port } }
    /// WS-Discovery, while it runs (`onvif.discovery`, HTTP beyond loopback).
    let discovery = Locked<DiscoveryService?>(nil)
    /// Whether discovery runs, and where or why not, as `GET /api/cameras` says it.
    let discoveryStatus = Locked("off (not started)")
    /// ONVIF's event subscriptions (pull points and push subscriptions), ended at stop.
    let onvifEvents = EventBroker()
    /// The saved state (`state.persist`): replayed at start, followed after.
    let keeper: StateKeeper?
    /// The camera the configuration makes main (the saved state may name another).
    private let configuredMain: String
    /// ONVIF's PTZ presets, one store for every router (saved with the state).
    let ptzPresets: PTZPresets

    /// Live H.264 clients now: WHEP peers, RTSP clients and live.mp4 streams (`live.maxClients`).
    var liveClientCount: Int { whep.count + liveMP4Count + rtspClientCount }
    var rtspClientCount: Int { rtsp.withLock { $0?.server.clientCount } ?? 0 }

    /// `liveEncoders`: the candidates live streams are made by, instead of `live.encoders`' (a
    /// test's encoder that fails mid-stream).
    public init(configuration: Configuration, logger: Logger = Logger(label: "viewfinder"),
                liveEncoders: [LiveEncoderCandidate]? = nil) throws {
        self.configuration = configuration
        self.logger = logger
        encoders = LiveEncoderChain(liveEncoders ?? configuration.live.encoders.map(LiveEncoderCandidate.libavcodec), logger: logger)
        for e in encoders.entries {
            if e.available {
                logger.info("live encoder \(e.name) (\(e.codec)): works, probed in \(e.probeMs.map { "\($0) ms" } ?? "-")")
            } else {
                logger.info("live encoder \(e.name) (\(e.codec)): not on this machine: \(e.reason ?? "?")")
            }
        }
        let devices = CameraFactory.make(configuration.cameras, logger: logger)
        guard !devices.isEmpty else { throw Configuration.Error(description: "cameras: no usable camera") }
        let microphones = CameraFactory.microphones(devices, configuration)
        let entries: [String: Configuration.CameraEntry]
        if case .list(let list) = configuration.cameras { entries = Dictionary(list.map { ($0.id, $0) }) { a, _ in a } } else { entries = [:] }
        let events = EventHub()
        movies = MovieStore(directory: configuration.recording.directory)
        for m in movies.recoverUnfinished() {
            logger.warning("movie \(m.id) was left unfinished (server killed or power lost): repaired, \(m.frames) frames, \(m.duration) s")
        }
        var sessions: [CaptureSession] = []
        // Every output of every camera works on these threads (one per core), none on its own.
        let pool = EncodePool(threads: ProcessInfo.processInfo.activeProcessorCount, name: "encode")
        for device in devices {
            let entry = entries[device.descriptor.id]
            if let synthetic = device as? SyntheticCamera {
                synthetic.timecode = entry?.timecode == true
                synthetic.noise = entry?.noise ?? configuration.synthetic.noise
            }
            if let codes = entry?.codes, !codes.isEmpty, let synthetic = device as? SyntheticCamera {
                do { try synthetic.setSceneCodes(codes) } catch {
                    throw Configuration.Error(description: "cameras: \(device.descriptor.id).codes: \(error)")
                }
            }
            do {
                sessions.append(try CaptureSession(
                    camera: device, microphones: microphones.filter { $0.key == device.descriptor.id },
                    configuration: SessionConfiguration(preset: entry?.preset ?? configuration.session.preset,
                                                        fps: entry?.fps ?? configuration.session.fps,
                                                        streamQuality: configuration.stream.quality,
                                                        captureQuality: configuration.capture.quality,
                                                        placeholder: { w, h, message in PlaceholderFrame.render(width: w, height: h, message: message) },
                                                        movies: movies, moviePreset: configuration.recording.preset,
                                                        metadataRate: configuration.metadata.rate,
                                                        streamSubsampling: configuration.stream.subsampling,
                                                        streamWorkers: configuration.stream.workers,
                                                        live: LiveEncoderSettings(keyframeInterval: configuration.live.keyframeInterval,
                                                                                  bitrate: configuration.live.bitrate),
                                                        motion: entry?.motion?.applied(to: configuration.motion) ?? configuration.motion)
                        .with(frameRing: configuration.mqtt.isEnabled && configuration.mqtt.fleet ? FleetCapture.ringSpan : 0)
                        .with(pool: pool)
                        .with(liveEncoders: encoders)
                        .with(sub: configuration.live.sub.encoderSettings(keyframeInterval: configuration.live.keyframeInterval)),
                    events: events, logger: logger))
            } catch {
                throw Configuration.Error(description: "cameras: \(device.descriptor.id): \(error.http.message)")
            }
        }
        // The main session: session.camera, else the rear camera, else the first.
        let main: Int
        if let id = configuration.session.camera {
            guard let i = devices.firstIndex(where: { $0.descriptor.id == id }) else {
                throw Configuration.Error(description: "session: " + SessionError.unknownCamera(id, known: devices.map(\.descriptor.id)).http.message)
            }
            main = i
        } else {
            main = CameraDescriptor.defaultIndex(in: devices.map(\.descriptor)) ?? 0
        }
        configuredMain = devices[main].descriptor.id
        let keeper = configuration.state.persist ? StateKeeper(file: StateFile(path: configuration.state.file), logger: logger) : nil
        self.keeper = keeper
        let (savedPresets, unreadPresets) = SavedPresets.read(keeper?.saved(section: "ptzPresets"))
        let presets = PTZPresets(saved: savedPresets, changed: { [weak keeper] in keeper?.sectionChanged() })
        ptzPresets = presets
        keeper?.follow(section: "ptzPresets", dropped: unreadPresets) { SavedPresets.json(presets.all) }
        let savedMain = keeper?.savedMain.flatMap { id in devices.firstIndex { $0.descriptor.id == id } }
        for l in configuration.server.listen where !devices.contains(where: { $0.descriptor.id == l.camera }) {
            throw Configuration.Error(description: "server.listen: no camera with id '\(l.camera)'")
        }
        cameras = MultiCamSession(sessions: sessions, main: savedMain ?? main, events: events)
        staticFiles = StaticFiles(directory: configuration.server.publicDirectory)
        access = AccessControl(configuration.auth, logger: logger)
        if configuration.auth.mode == .none && !configuration.server.host.hasPrefix("127.") {
            logger.warning("auth is \"none\": anyone who can reach \(configuration.server.host):\(configuration.server.port) can watch and steer the cameras")
        }
        let ice = ICEServers(configuration, logger: logger)
        self.ice = ice
        whep = WHEPService(ice: { ice.forServer() }, logger: logger)
        talk = TalkService(speakers: CameraFactory.speakers(devices, configuration), ice: { ice.forServer() }, logger: logger)
        photos = PhotoStore(directory: configuration.capture.directory)
        let unfinished = photos.removeUnfinished()
        if !unfinished.isEmpty {
            logger.warning("removed \(unfinished.count) unfinished photo file(s) left by a crash (never answered, never listed)")
        }
        retention = configuration.storage.isLimited
            ? StorageRetention(settings: configuration.storage, movies: movies, photos: photos, events: events, logger: logger) : nil
    }

    /// The bound port (the configured one, or the one picked for port 0).
    public var port: Int { server?.port ?? 0 }

    public func start() async throws {
        // Before anything can start a camera: the saved settings are its first frame's.
        await keeper?.restore(cameras, configuredMain: configuredMain, autostart: autostart)
        let files = OpenFileLimit.raise()
        if files >= 0 && files < configuration.server.maxConnections + 64 {
            logger.warning("open files limited to \(files): fewer than server.maxConnections (\(configuration.server.maxConnections)) can be served")
        }
        let s = HTTPServer(configuration: serverConfiguration(host: configuration.server.host, port: configuration.server.port),
                           router: makeRouter(), logger: logger)
        running.withLock { $0 = [s] }
        retention?.start()
        try startListening(s)
        for l in configuration.server.listen {
            let extra = HTTPServer(configuration: serverConfiguration(host: l.host ?? configuration.server.host, port: l.port),
                                   router: makeListenerRouter(camera: l.camera), logger: logger)
            running.withLock { $0.append(extra) }
            try startListening(extra)
            logger.info("camera \(l.camera) also on http\(configuration.server.tls == nil ? "" : "s")://\(l.host ?? configuration.server.host):\(extra.port)/?action=stream")
        }
        startRTSP()
        await startDiscovery(port: s.port)
        try startMQTT()
        if configuration.webrtc.enabled { whep.warmUp() }
        await startCameras()
        await keeper?.follow(cameras)
        for s in cameras.sessions { await s.ensurePreviewFrame() }
    }

    /// The RTSP server, where HTTP listens unless `rtsp.host` says otherwise, serving every camera
    /// and `/main`. A port already taken is logged, not fatal: RTSP is one output among several,
    /// and the HTTP API (and its live.mp4 and WHEP) serves on without it, as a camera that fails
    /// to autostart does.
    private func startRTSP() {
        guard configuration.rtsp.enabled else { return }
        let host = configuration.rtsp.host ?? configuration.server.host
        let service = RTSPService(cameras: cameras, talks: talk, access: access, full: { [weak self] in
            guard let self else { return true }
            return self.liveClientCount >= self.configuration.live.maxClients
        }, logger: logger)
        let server: RTSPServer
        do {
            server = try RTSPServer(address: host, port: configuration.rtsp.port, authenticate: configuration.auth.mode == .accounts, delegate: service)
        } catch {
            logger.error("rtsp: not serving: \(error)")
            return
        }
        for path in service.paths { server.mount(path, talk: service.talks(path)) }
        for path in service.jpegPaths { server.mount(path, jpeg: true) }
        rtsp.withLock { $0 = (server, service) }
        logger.info("RTSP on rtsp://\(host):\(server.port)/main and /<camera-id>")
    }

    private func startListening(_ s: HTTPServer) throws {
        do { try s.start() } catch let e as TLSError {
            // Named by config key: "server.tls.key /etc/x.pem: open failed: Permission denied".
            throw Configuration.Error(description: "\(Self.configKey(e)): \(e)")
        }
    }

    private func serverConfiguration(host: String, port: Int) -> ServerConfiguration {
        ServerConfiguration(
            host: host, port: port,
            maxConnections: configuration.server.maxConnections,
            allowOrigins: configuration.server.allowOrigins,
            exposedHeaders: ["X-Frame-Sequence", "X-Capture-Timestamp", "X-Viewfinder-Online", "X-Viewfinder-Camera", "Location", "ETag", "Link"],
            staticFiles: staticFiles, renderError: errorBody,
            gate: { [access] request, digest in access.gate(&request, digest) },
            tls: configuration.server.tls.map { .init(certificate: $0.certificate, key: $0.key) },
            maxConnectionsPerAddress: configuration.server.maxConnectionsPerAddress,
            headerTimeout: configuration.server.headerTimeout,
            threads: configuration.server.threads ?? ServerConfiguration.defaultThreads,
            // Checked when the configuration was read: every entry parses.
            trustedProxies: (try? TrustedProxies(configuration.server.trustedProxies)) ?? .none)
    }

    /// SIGHUP: reads server.tls's files again. New connections get the new certificate,
    /// open ones (running streams) keep theirs; a bad file keeps the old one. Logs either way.
    @discardableResult
    public func reloadCertificate() -> Bool {
        let servers = running.withLock { $0 }
        guard !servers.isEmpty, configuration.server.tls != nil else {
            logger.notice("SIGHUP: no server.tls configured; nothing to reload")
            return false
        }
        do {
            var fingerprint = ""
            for server in servers { fingerprint = try server.reloadCertificate() }
            logger.notice("TLS certificate reloaded (SHA-256 \(fingerprint))")
            return true
        } catch {
            let named = (error as? TLSError).map { "\(Self.configKey($0)): \($0)" } ?? "\(error)"
            logger.error("TLS certificate reload failed, keeping the previous one: \(named)")
            return false
        }
    }

    /// The config key a TLS error is about.
    /// Connects to `mqtt.url` (the client retries by itself while the broker is away).
    private func startMQTT() throws {
        let settings = configuration.mqtt
        let will = MQTTMessage(topic: MQTTTopics(prefix: settings.topicPrefix, node: settings.node).status, text: "offline", qos: 1, retain: true)
        guard let options = try settings.options(will: will) else { return }
        let host = configuration.server.host
        let shown = host == "0.0.0.0" || host == "::" ? ProcessInfo.processInfo.hostName : (host.contains(":") ? "[\(host)]" : host)
        let page = "http\(configuration.server.tls == nil ? "" : "s")://\(shown):\(port)/"
        let bridge = try MQTTBridge(settings: settings, options: options, router: makeRouter(), access: access, cameras: cameras,
                                    events: cameras.events, photos: photos, pageURL: page, maxBodyBytes: 64 * 1024, logger: logger)
        mqtt.withLock { $0 = bridge }
        bridge.start()
        logger.info("mqtt: \(settings.url ?? "") as node '\(settings.node)' (topics \(settings.topicPrefix)/\(settings.node)/…)")
    }

    static func configKey(_ e: TLSError) -> String {
        switch e.file {
        case .certificate: "server.tls.certificate"
        case .key: "server.tls.key"
        case .pair: "server.tls"
        }
    }

    /// Graceful: streams end, the servers stop, every camera is released. False when a thread
    /// of its own is still inside a library (WebRTC's warm-up, on a starved machine): the
    /// process must then end with `_exit`, not `exit`, whose handlers free what it still uses.
    @discardableResult
    public func stop() async -> Bool {
        // `offline` first, while the sessions still answer; the bridge's router holds this
        // application, so it is let go here as the servers are.
        if let bridge = mqtt.withLock({ b in defer { b = nil }; return b }) {
            await onOwnThread("mqtt-stop") { bridge.stop() }  // flushes for up to a second
        }
        if let d = discovery.withLock({ d in defer { d = nil }; return d }) {
            await onOwnThread("discovery-stop") { d.stop() }  // Bye, once its thread has ended
        }
        for s in cameras.sessions { s.hub.wakeAll() }
        // The servers' routes hold this application (their handlers call it): dropping the
        // stopped servers ends that cycle, so an application that stopped can be freed (the
        // tests start dozens; LeakSanitizer found every one alive at exit).
        // Each of these blocks (a server's grace for its last requests, pipelines set to NULL):
        // off the cooperative pool, whose threads every other server's routes need.
        let servers = running.withLock { s in defer { s.removeAll() }; return s }
        await onOwnThread("server-stop") { for server in servers { server.stop() } }
        retention?.stop()
        onvifEvents.close()  // push deliveries end after the POST each is in
        let quiet = await whep.closeAll()
        await talk.closeAll()
        if let r = rtsp.withLock({ r in defer { r = nil }; return r }) {
            await onOwnThread("rtsp-stop") {
                r.server.stop()
                r.service.stopAll()
            }
        }
        // The last change written before the cameras stop: a stop at exit is not a stop a user asked for.
        keeper?.close()
        // A movie being recorded is finished (trailer written, published) before the exit.
        for s in cameras.sessions {
            if let recorder = try? await s.stopRecording() { _ = await recorder.outcome() }
            if let recorder = await s.endEventMovie() { _ = await recorder.outcome() }
            await s.stop()
        }
        return quiet
    }
}
