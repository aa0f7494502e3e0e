// viewfinder: parse flags, load config.json, build the application, serve until SIGINT or
// SIGTERM, then stop gracefully (streams end, camera released) and exit 0. Operators'
// subcommands beside it: `cameras`, `check-config`, `user`, `token`, `state`, and `--version`.

import ArgumentParser
import CMalloc
import Dispatch
import Foundation
import SystemSupport
import HTTPServer
import Logging
import ViewfinderApp

@main
struct Viewfinder: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "viewfinder",
        abstract: "An HTTP camera server with AVFoundation's capture-session model.",
        discussion: "Without a subcommand viewfinder serves: `viewfinder --port 9000` is `viewfinder serve --port 9000`.",
        version: viewfinderVersion,
        subcommands: [Serve.self, Cameras.self, CheckConfig.self, User.self, Token.self, StateCommand.self],
        defaultSubcommand: Serve.self)
}

/// config.json and the flags over it, shared by `serve` and `check-config`.
struct ConfigOptions: ParsableArguments {
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
    @Option(help: "Encode threads per camera, 1–32 (stream.workers; default one per core).") var workers: Int?
    @Option(help: "RTSP port; 0 picks a free one (rtsp.port).") var rtspPort: Int?
    @Flag(help: "Do not start the session at launch (session.autostart = false).") var noAutostart = false

    /// The configuration to serve; a bad file or flag is reported naming the key and exits 2.
    func load() throws -> Configuration {
        var o = ConfigurationOverrides()
        o.host = host; o.port = port; o.publicDirectory = publicDirectory; o.allowOrigin = allowOrigin
        o.maxConnections = maxConnections; o.cameras = cameras; o.camera = camera; o.preset = preset
        o.fps = fps; o.quality = quality; o.workers = workers; o.noAutostart = noAutostart; o.rtspPort = rtspPort
        return try effective(o, path: config)
    }
}

func effective(_ overrides: ConfigurationOverrides, path: String?) throws -> Configuration {
    do { return try overrides.effectiveConfiguration(path: path) } catch {
        FileHandle.standardError.write(Data("viewfinder: configuration error: \(error)\n".utf8))
        throw ExitCode(2)
    }
}

func bootstrapLogging(_ level: Logger.Level) {
    LoggingSystem.bootstrap { label in
        var h = StreamLogHandler.standardError(label: label)
        h.logLevel = level
        return h
    }
}

/// `viewfinder serve` (the default): serve until SIGINT or SIGTERM. Under systemd
/// (Type=notify) it says READY=1 once the server listens, STOPPING=1 when it stops, and
/// WATCHDOG=1 at half of WatchdogSec.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the cameras over HTTP (the default).")

    @OptionGroup var options: ConfigOptions
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") var logLevel: String = "info"

    func run() async throws {
        // malloc's tuning (one arena, no eager trimming) is set before main: CMalloc.c.
        // libx264 marks its large buffers MADV_HUGEPAGE, and so the malloc arenas they sit in:
        // once freed, that memory stays resident in 2 MiB pages which malloc_trim (below)
        // cannot give back a 4 KiB page at a time, and khugepaged folds more of it back in.
        // The soak saw 90 MiB of such pages and RSS climbing with every recording. Without
        // huge pages RSS follows what is in use; x264 loses a few percent at most.
        let thp = vf_disable_transparent_huge_pages()
        // A file past RLIMIT_FSIZE must fail its write with EFBIG (a movie then ends as
        // diskFull and keeps what was written), not kill the server with SIGXFSZ.
        try? Sys.ignore(signal: SIGXFSZ, "SIGXFSZ")
        bootstrapLogging(Logger.Level(rawValue: logLevel) ?? .info)
        let logger = Logger(label: "viewfinder")
        if thp != 0 { logger.notice("prctl(PR_SET_THP_DISABLE): \(String(cString: strerror(thp))); huge pages stay as the system sets them") }
        // Before anything can announce readiness: a signal that arrives early must still
        // mean a graceful stop, not the default action.
        let termination = TerminationSignal()
        let settings = try options.load()
        let systemd = SystemdNotifier()
        func tell(_ state: String) {
            do { try systemd?.notify(state) } catch { logger.error("sd_notify \(state.prefix { $0 != "\n" }): \(error)") }
        }

        let app: Application
        do {
            app = try Application(configuration: settings, logger: logger)
            try await app.start()
        } catch {
            FileHandle.standardError.write(Data("viewfinder: \(error)\n".utf8))
            tell("STATUS=\(error)")
            throw ExitCode(1)
        }
        let url = "\(settings.server.tls == nil ? "http" : "https")://\(settings.server.host):\(app.port)/"
        // Unbuffered, so scripts and tests reading stdout learn the port at once.
        FileHandle.standardOutput.write(Data("Viewfinder listening on \(url)\n".utf8))
        if let rtsp = app.rtspPort { FileHandle.standardOutput.write(Data("RTSP on rtsp://\(settings.rtsp.host ?? settings.server.host):\(rtsp)/main\n".utf8)) }
        tell("READY=1\nSTATUS=Listening on \(url)\nMAINPID=\(getpid())")
        let watchdog = SystemdNotifier.watchdogInterval().flatMap { interval in
            systemd?.watchdog(every: interval,
                              alive: { _ = await app.session.state() },  // the session actor answers
                              failed: { logger.error("sd_notify WATCHDOG=1: \($0)") })
        }

        termination.onHangup { app.reloadCertificate() }
        let trimmer = MemoryTrimmer.start()

        let signal = await termination.wait()
        logger.info("signal \(signal): stopping")
        tell("STOPPING=1\nSTATUS=Stopping (\(signal))")
        watchdog?.cancel()
        trimmer.cancel()
        if await app.stop() {
            logger.info("stopped")
        } else {
            // A thread is still inside OpenSSL (WebRTC's warm-up making its key pair): exit's
            // handlers would free the locks it takes and crash it. Everything of ours is done
            // and written; leave without them.
            logger.warning("stopped, WebRTC's warm-up still running: leaving without the exit handlers")
            fflush(nil)
            _exit(0)
        }
    }
}

/// `viewfinder cameras`: what the server would see.
struct Cameras: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the cameras with their formats and capabilities, as the server would see them.")

    @Option(help: "Configuration file (default ./config.json if present).") var config: String?
    @Option(help: "\"auto\" or \"synthetic\", over the file's cameras.") var cameras: String?
    @Flag(help: "Print /api/cameras' JSON instead of text.") var json = false

    func run() async throws {
        bootstrapLogging(.warning)
        var o = ConfigurationOverrides()
        o.cameras = cameras
        let listing = CameraListing(try effective(o, path: config))
        guard !listing.isEmpty else {
            FileHandle.standardError.write(Data("viewfinder: no usable camera\n".utf8))
            throw ExitCode(1)
        }
        FileHandle.standardOutput.write(Data((json ? listing.json : listing.text).utf8))
    }
}

/// `viewfinder check-config`: validate, then print the configuration `serve` would use.
struct CheckConfig: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate the configuration and print the effective one (file, then flags) as JSON.",
        discussion: "Exits 2 with a message naming the key when the file or a flag is bad.")

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        let c = try options.load()
        var notes: [String] = []
        if !Sys.isDirectory(c.server.publicDirectory) {
            notes.append("warning: server.publicDirectory: '\(c.server.publicDirectory)' is not a directory; the page will not be served")
        }
        if case .list(let entries) = c.cameras {
            for (i, e) in entries.enumerated() {
                if let p = e.path, !Sys.exists(p) { notes.append("warning: cameras[\(i)].path: '\(p)' does not exist") }
                if let d = e.device, e.source == .v4l2, !Sys.exists(d) { notes.append("warning: cameras[\(i)].device: '\(d)' does not exist (yet)") }
            }
        }
        let source = options.config ?? (Sys.exists("config.json") ? "config.json" : "built-in defaults")
        FileHandle.standardError.write(Data((notes + ["viewfinder: \(source): valid"]).map { $0 + "\n" }.joined().utf8))
        FileHandle.standardOutput.write(Data(c.jsonText.utf8))
    }
}

/// `viewfinder user add|remove`: accounts in config.json, hashed; the password from stdin.
struct User: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add or remove a user in config.json (the password is read from standard input, never the command line).",
        subcommands: [Add.self, Remove.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a user, or give an existing one a new password or role.",
            discussion: "Reads the password from standard input (not echoed on a terminal) and stores only its yescrypt hash and Digest's HA1 for the realm.")
        @Argument(help: "The user's name.") var name: String
        @Option(help: "viewer (watches) or operator (steers).") var role: String
        @Option(help: "Configuration file to edit.") var config = "config.json"
        @Flag(help: "Also let the user sign in over ONVIF (an NVR, Home Assistant's ONVIF integration). ONVIF's PasswordDigest can only be checked against the password itself, so it is kept in the file, which is then made readable by its owner (and group) only.")
        var onvif = false

        func run() throws {
            guard let password = AccountsFile.readPassword(prompt: "Password for \(name): "), !password.isEmpty else {
                FileHandle.standardError.write(Data("viewfinder: no password on standard input\n".utf8))
                throw ExitCode(2)
            }
            do { try AccountsFile.addUser(name, role: role, password: password, onvif: onvif, config: config) } catch {
                FileHandle.standardError.write(Data("viewfinder: \(error.description)\n".utf8))
                throw ExitCode(2)
            }
            FileHandle.standardError.write(Data("viewfinder: \(config): user '\(name)' (\(role)\(onvif ? ", ONVIF sign-in" : "")) saved\n".utf8))
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a user.")
        @Argument(help: "The user's name.") var name: String
        @Option(help: "Configuration file to edit.") var config = "config.json"

        func run() throws {
            do { try AccountsFile.removeUser(name, config: config) } catch {
                FileHandle.standardError.write(Data("viewfinder: \(error.description)\n".utf8))
                throw ExitCode(2)
            }
        }
    }
}

/// `viewfinder token add|remove`: tokens for clients that cannot sign in (an <img> URL).
struct Token: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add or remove an access token in config.json (shown once; only its SHA-256 is kept).",
        subcommands: [Add.self, Remove.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a token and print it once: use it as `Authorization: Bearer TOKEN` or `?token=TOKEN`.")
        @Argument(help: "What the token is for (e.g. octoprint).") var name: String
        @Option(help: "viewer (watches) or operator (steers).") var role: String
        @Option(help: "Configuration file to edit.") var config = "config.json"

        func run() throws {
            do {
                let token = try AccountsFile.addToken(name, role: role, config: config)
                print(token)
            } catch {
                FileHandle.standardError.write(Data("viewfinder: \(error.description)\n".utf8))
                throw ExitCode(2)
            }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a token.")
        @Argument(help: "The token's name.") var name: String
        @Option(help: "Configuration file to edit.") var config = "config.json"

        func run() throws {
            do { try AccountsFile.removeToken(name, config: config) } catch {
                FileHandle.standardError.write(Data("viewfinder: \(error.description)\n".utf8))
                throw ExitCode(2)
            }
        }
    }
}

/// Catches SIGINT and SIGTERM from the moment it is made; `wait()` returns the first one's
/// name, whether it came before or after the call.
private final class TerminationSignal: Sendable {
    private struct Received {
        var name: String?
        var waiter: CheckedContinuation<String, Never>?
        var hangup: (@Sendable () -> Void)?
    }
    private let received = Locked(Received())
    /// The signal sources, kept alive with the object; never touched after init.
    nonisolated(unsafe) private var sources: [DispatchSourceSignal] = []

    init() {
        for (sig, name) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")] {
            try? Sys.ignore(signal: sig, name)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [weak self] in self?.deliver(name) }
            source.resume()
            sources.append(source)
        }
        // SIGHUP reloads the TLS certificate (ignored until a handler is set).
        try? Sys.ignore(signal: SIGHUP, "SIGHUP")
        let hup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        hup.setEventHandler { [weak self] in self?.received.withLock { $0.hangup }?() }
        hup.resume()
        sources.append(hup)
    }

    func onHangup(_ handler: @escaping @Sendable () -> Void) { received.withLock { $0.hangup = handler } }

    private func deliver(_ name: String) {
        let w = received.withLock { r -> CheckedContinuation<String, Never>? in
            guard r.name == nil else { return nil }
            r.name = name
            defer { r.waiter = nil }
            return r.waiter
        }
        w?.resume(returning: name)
    }

    func wait() async -> String {
        await withCheckedContinuation { c in
            let early = received.withLock { r -> String? in
                if let name = r.name { return name }
                r.waiter = c
                return nil
            }
            if let early { c.resume(returning: early) }
        }
    }
}
