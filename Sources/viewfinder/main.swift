// viewfinder: parse flags, load config.json, build the application, serve until SIGINT or
// SIGTERM, then stop gracefully (streams end, camera released) and exit 0.

import ArgumentParser
import CMalloc
import Dispatch
import Foundation
import HTTPServer
import Logging
import ViewfinderApp

@main
struct Viewfinder: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "viewfinder",
        abstract: "An HTTP camera server with AVFoundation's capture-session model.")

    @Option(help: "Configuration file (default ./config.json if present).")
    var config: String?
    @Option(help: "Address to bind (server.host).") var host: String?
    @Option(help: "Port to listen on; 0 picks a free one (server.port).") var port: Int?
    @Option(help: "Directory of static files (server.publicDirectory).") var publicDirectory: String?
    @Option(help: "CORS origin to allow (server.allowOrigin).") var allowOrigin: String?
    @Option(help: "Connection limit; beyond it 503 (server.maxConnections).") var maxConnections: Int?
    @Option(help: "\"auto\" or \"synthetic\" (cameras).") var cameras: String?
    @Option(help: "Camera to start with (session.camera).") var camera: String?
    @Option(help: "Preset: photo, high, medium, low or WIDTHxHEIGHT (session.preset).") var preset: String?
    @Option(help: "Frames per second (session.fps).") var fps: Int?
    @Option(help: "Preview JPEG quality 1–100 (stream.quality).") var quality: Int?
    @Flag(help: "Do not start the session at launch (session.autostart = false).") var noAutostart = false
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") var logLevel: String = "info"

    func run() async throws {
        // glibc trims and unmaps freed heap eagerly; on the frame path that turned every
        // tjTransform's large buffers into fresh page faults (2.4× slower here). Keep them.
        mallopt(M_MMAP_THRESHOLD, 64 << 20)
        mallopt(M_TRIM_THRESHOLD, 256 << 20)
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = level
            return h
        }
        let logger = Logger(label: "viewfinder")
        // Before anything can announce readiness: a signal that arrives early must still
        // mean a graceful stop, not the default action.
        let termination = TerminationSignal()
        let settings: Configuration
        do {
            settings = try loadConfiguration()
        } catch {
            FileHandle.standardError.write(Data("viewfinder: configuration error: \(error)\n".utf8))
            throw ExitCode(2)
        }

        let app = try Application(configuration: settings, logger: logger)
        do { try await app.start() } catch {
            FileHandle.standardError.write(Data("viewfinder: \(error)\n".utf8))
            throw ExitCode(1)
        }
        // Unbuffered, so scripts and tests reading stdout learn the port at once.
        FileHandle.standardOutput.write(Data("Viewfinder listening on \(settings.server.tls == nil ? "http" : "https")://\(settings.server.host):\(app.port)/\n".utf8))
        termination.onHangup { app.reloadCertificate() }

        let signal = await termination.wait()
        logger.info("signal \(signal): stopping")
        await app.stop()
        logger.info("stopped")
    }

    private func loadConfiguration() throws -> Configuration {
        var c = try Configuration.load(path: config ?? "config.json", required: config != nil)
        if let host { c.server.host = host }
        if let port {
            guard (0...65535).contains(port) else { throw ValidationError("--port: \(port) is outside 0…65535") }
            c.server.port = port
        }
        if let publicDirectory { c.server.publicDirectory = publicDirectory }
        if let allowOrigin { c.server.allowOrigin = allowOrigin }
        if let maxConnections {
            guard maxConnections > 0 else { throw ValidationError("--max-connections: must be positive") }
            c.server.maxConnections = maxConnections
        }
        if let cameras {
            switch cameras {
            case "auto": c.cameras = .auto
            case "synthetic": c.cameras = .synthetic
            default: throw ValidationError("--cameras: expected auto or synthetic, got '\(cameras)'")
            }
        }
        if let camera { c.session.camera = camera }
        if let preset { c.session.preset = preset }
        if let fps {
            guard (1...120).contains(fps) else { throw ValidationError("--fps: \(fps) is outside 1…120") }
            c.session.fps = fps
        }
        if let quality {
            guard (1...100).contains(quality) else { throw ValidationError("--quality: \(quality) is outside 1…100") }
            c.stream.quality = quality
        }
        if noAutostart { c.session.autostart = false }
        try c.validate()
        return c
    }
}

/// Catches SIGINT and SIGTERM from the moment it is made; `wait()` returns the first one's
/// name, whether it came before or after the call.
private final class TerminationSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var received: String?
    private var waiter: CheckedContinuation<String, Never>?
    private var sources: [DispatchSourceSignal] = []

    init() {
        for (sig, name) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [weak self] in self?.deliver(name) }
            source.resume()
            sources.append(source)
        }
        // SIGHUP reloads the TLS certificate (ignored until a handler is set).
        signal(SIGHUP, SIG_IGN)
        let hup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        hup.setEventHandler { [weak self] in self?.lock.withLock { self?.hangup }?() }
        hup.resume()
        sources.append(hup)
    }

    private var hangup: (@Sendable () -> Void)?
    func onHangup(_ handler: @escaping @Sendable () -> Void) { lock.withLock { hangup = handler } }

    private func deliver(_ name: String) {
        let w = lock.withLock { () -> CheckedContinuation<String, Never>? in
            guard received == nil else { return nil }
            received = name
            defer { waiter = nil }
            return waiter
        }
        w?.resume(returning: name)
    }

    func wait() async -> String {
        await withCheckedContinuation { c in
            let early = lock.withLock { () -> String? in
                if let received { return received }
                waiter = c
                return nil
            }
            if let early { c.resume(returning: early) }
        }
    }
}
