// Composition: configuration → cameras → session → router → server. Start and stop in
// one place, so main.swift and the live tests run exactly the same thing.

import Auth
import CameraCore
import Capture
import Foundation
import HTTPServer
import Logging
import Session
import Synchronization

public final class Application: Sendable {
    public let configuration: Configuration
    public let session: CaptureSession
    let staticFiles: StaticFiles
    let parts = PartCache()
    let photos: PhotoStore
    let access: AccessControl
    private let running = Mutex<HTTPServer?>(nil)
    var server: HTTPServer? { running.withLock { $0 } }
    private let logger: Logger

    public init(configuration: Configuration, logger: Logger = Logger(label: "viewfinder")) throws {
        self.configuration = configuration
        self.logger = logger
        let cameras = CameraFactory.make(configuration.cameras, logger: logger)
        guard !cameras.isEmpty else { throw Configuration.Error(description: "cameras: no usable camera") }
        do {
            session = try CaptureSession(
                cameras: cameras,
                configuration: SessionConfiguration(camera: configuration.session.camera,
                                                    preset: configuration.session.preset,
                                                    fps: configuration.session.fps,
                                                    streamQuality: configuration.stream.quality,
                                                    captureQuality: configuration.capture.quality,
                                                    placeholder: { w, h, message in PlaceholderFrame.render(width: w, height: h, message: message) }),
                logger: logger)
        } catch {
            throw Configuration.Error(description: "session: \(error.http.message)")
        }
        staticFiles = StaticFiles(directory: configuration.server.publicDirectory)
        access = AccessControl(configuration.auth, logger: logger)
        if configuration.auth.mode == .none && !configuration.server.host.hasPrefix("127.") {
            logger.warning("auth is \"none\": anyone who can reach \(configuration.server.host):\(configuration.server.port) can watch and steer the cameras")
        }
        photos = PhotoStore(directory: configuration.capture.directory)
    }

    /// The bound port (the configured one, or the one picked for port 0).
    public var port: Int { server?.port ?? 0 }

    public func start() async throws {
        let s = HTTPServer(configuration: ServerConfiguration(
            host: configuration.server.host, port: configuration.server.port,
            maxConnections: configuration.server.maxConnections,
            allowOrigins: configuration.server.allowOrigins,
            exposedHeaders: ["X-Frame-Sequence", "X-Capture-Timestamp", "X-Viewfinder-Online", "Location"],
            staticFiles: staticFiles, unavailableCode: "camera_unavailable",
            gate: { [access] request, digest in access.gate(&request, digest) },
            tls: configuration.server.tls.map { .init(certificate: $0.certificate, key: $0.key) },
            maxConnectionsPerAddress: configuration.server.maxConnectionsPerAddress,
            headerTimeout: configuration.server.headerTimeout),
            router: makeRouter(), logger: logger)
        running.withLock { $0 = s }
        do { try s.start() } catch let e as TLSError {
            // Named by config key: "server.tls.key /etc/x.pem: open failed: Permission denied".
            throw Configuration.Error(description: "\(Self.configKey(e)): \(e)")
        }
        if configuration.session.autostart {
            do { try await session.start() } catch {
                logger.error("autostart failed: \(error.http.message)")
            }
        }
        await session.ensurePreviewFrame()
    }

    /// SIGHUP: reads server.tls's files again. New connections get the new certificate,
    /// open ones (running streams) keep theirs; a bad file keeps the old one. Logs either way.
    @discardableResult
    public func reloadCertificate() -> Bool {
        guard let server, configuration.server.tls != nil else {
            logger.notice("SIGHUP: no server.tls configured; nothing to reload")
            return false
        }
        do {
            let fingerprint = try server.reloadCertificate()
            logger.notice("TLS certificate reloaded (SHA-256 \(fingerprint))")
            return true
        } catch {
            let named = (error as? TLSError).map { "\(Self.configKey($0)): \($0)" } ?? "\(error)"
            logger.error("TLS certificate reload failed, keeping the previous one: \(named)")
            return false
        }
    }

    /// The config key a TLS error is about.
    static func configKey(_ e: TLSError) -> String {
        switch e.file {
        case .certificate: "server.tls.certificate"
        case .key: "server.tls.key"
        case .pair: "server.tls"
        }
    }

    /// Graceful: streams end, the server stops, the camera is released.
    public func stop() async {
        session.hub.wakeAll()
        server?.stop()
        await session.stop()
    }
}
