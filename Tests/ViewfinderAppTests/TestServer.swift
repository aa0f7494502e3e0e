// Runs the real Application in-process on 127.0.0.1, port 0.

import Foundation
import Logging
import Movie
@testable import ViewfinderApp

/// The package root, from this file's path.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

func testConfiguration(_ edit: (inout Configuration) -> Void = { _ in }) -> Configuration {
    var c = Configuration()
    c.server.port = 0
    c.server.publicDirectory = packageRoot + "/Public"
    c.cameras = .synthetic
    c.session.preset = "352x288"
    c.capture.directory = NSTemporaryDirectory() + "vf-photos-\(UUID().uuidString)"
    c.recording.directory = NSTemporaryDirectory() + "vf-movies-\(UUID().uuidString)"
    c.recording.preset = "ultrafast"
    // Each server its own saved state: one test's changes are never another's start.
    c.state.directory = NSTemporaryDirectory() + "vf-state-\(UUID().uuidString)"
    c.rtsp.port = 0
    // A flat test card: the suites run dozens of cameras at once on 2 cores, and noise makes
    // every frame costlier to encode (SensorNoiseTests and bench/live.py measure it).
    c.synthetic.noise = false
    // Mute, for the same reason: a microphone's thread in every one of those servers costs a
    // core between them in a debug build. The suites about sound turn it on.
    c.synthetic.microphone = false
    edit(&c)
    return c
}

/// Starts an application, runs `body`, and always stops it.
/// `encoders`: the live encoders' candidates instead of `live.encoders`' (FakeEncoders).
func withServer(_ edit: (inout Configuration) -> Void = { _ in }, encoders: [LiveEncoderCandidate]? = nil,
                _ body: (Application, Int) async throws -> Void) async throws {
    var logger = Logger(label: "test")
    logger.logLevel = .warning
    let app = try Application(configuration: testConfiguration(edit), logger: logger, liveEncoders: encoders)
    try await app.start()
    do { try await body(app, app.port) } catch {
        await app.stop()
        throw error
    }
    await app.stop()
}
