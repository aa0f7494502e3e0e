// Command-line flags over config.json: what `viewfinder serve` and `viewfinder check-config`
// both apply, so the configuration checked is the one served.

import HTTPServer
import JSON

public struct ConfigurationOverrides: Sendable, Equatable {
    public var host: String?
    public var port: Int?
    public var publicDirectory: String?
    public var allowOrigin: String?
    public var maxConnections: Int?
    public var cameras: String?
    public var camera: String?
    public var preset: String?
    public var fps: Int?
    public var quality: Int?
    public var workers: Int?
    public var noAutostart = false
    public var rtspPort: Int?

    public init() {}

    /// `path` or ./config.json (when it exists), then the flags, then the cross-field checks.
    /// Errors name the key or the flag.
    public func effectiveConfiguration(path: String?) throws(Configuration.Error) -> Configuration {
        var c = try Configuration.load(path: path ?? "config.json", required: path != nil)
        // The saved state lives beside the configuration it departs from: a relative
        // state.directory is the config file's (two servers with two files never share one).
        if let path, !c.state.directory.hasPrefix("/"), let slash = path.lastIndex(of: "/") {
            c.state.directory = String(path[..<slash]) + "/" + c.state.directory
        }
        try apply(to: &c)
        do throws(JSONFieldError) { try c.validate() } catch {
            throw Configuration.Error(description: error.description)
        }
        return c
    }

    func apply(to c: inout Configuration) throws(Configuration.Error) {
        func bad(_ message: String) -> Configuration.Error { Configuration.Error(description: message) }
        if let host { c.server.host = host }
        if let port {
            guard (0...65535).contains(port) else { throw bad("--port: \(port) is outside 0…65535") }
            c.server.port = port
        }
        if let publicDirectory { c.server.publicDirectory = publicDirectory }
        if let allowOrigin { c.server.allowOrigins = [allowOrigin] }
        if let maxConnections {
            guard maxConnections > 0 else { throw bad("--max-connections: must be positive") }
            c.server.maxConnections = maxConnections
        }
        if let cameras {
            switch cameras {
            case "auto": c.cameras = .auto
            case "synthetic": c.cameras = .synthetic
            default: throw bad("--cameras: expected auto or synthetic, got '\(cameras)'")
            }
        }
        if let camera { c.session.camera = camera }
        if let preset { c.session.preset = preset }
        if let fps {
            guard (1...120).contains(fps) else { throw bad("--fps: \(fps) is outside 1…120") }
            c.session.fps = fps
        }
        if let quality {
            guard (1...100).contains(quality) else { throw bad("--quality: \(quality) is outside 1…100") }
            c.stream.quality = quality
        }
        if let workers {
            guard Configuration.Stream.workersRange.contains(workers) else { throw bad("--workers: \(workers) is outside 1…32") }
            c.stream.workers = workers
        }
        if noAutostart { c.session.autostart = false }
        if let rtspPort {
            guard (0...65535).contains(rtspPort) else { throw bad("--rtsp-port: \(rtspPort) is outside 0…65535") }
            c.rtsp.port = rtspPort
        }
    }
}
