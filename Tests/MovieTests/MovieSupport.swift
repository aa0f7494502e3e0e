// What the movie tests share: frames drawn in memory, a recorder fed at a chosen capture
// time, and ffprobe/ffmpeg — the field's own tools — reading the files back.

import CameraCore
import Foundation
import Movie
import SystemSupport
import Testing

struct TestError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

func temporaryDirectory(_ name: String) -> String {
    let d = NSTemporaryDirectory() + "vf-\(name)-\(UUID().uuidString)"
    try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
    return d
}

/// A YUYV frame: a grey ramp with a bright square that moves with `index` (so H.264 has
/// something to code), and optionally a centre quarter of one colour.
func yuyvFrame(width: Int, height: Int, index: Int, centre: (y: UInt8, u: UInt8, v: UInt8)? = nil) -> [UInt8] {
    var f = [UInt8](repeating: 0, count: width * height * 2)
    let sq = (x: (index * 4) % max(1, width - 32), y: height / 3)
    for y in 0..<height {
        for x in stride(from: 0, to: width, by: 2) {
            var luma = UInt8(truncatingIfNeeded: 40 + (x * 160) / width)
            var (u, v): (UInt8, UInt8) = (128, 128)
            if x >= sq.x && x < sq.x + 32 && y >= sq.y && y < sq.y + 32 { luma = 235 }
            if let c = centre, x >= width / 4, x < width * 3 / 4, y >= height / 4, y < height * 3 / 4 { (luma, u, v) = (c.y, c.u, c.v) }
            let o = (y * width + x) * 2
            f[o] = luma; f[o + 1] = u; f[o + 2] = luma; f[o + 3] = v
        }
    }
    return f
}

/// Collects the recorder's `onEnd` call.
final class EndProbe: Sendable {
    let outcome = Locked<RecordingOutcome?>(nil)
    var handler: @Sendable (RecordingOutcome) -> Void { { o in self.outcome.withLock { $0 = o } } }
}

extension MovieRecorder {
    /// Offers one frame captured at `t`.
    func offer(_ bytes: [UInt8], format: VideoFormat, at t: Double, zoom: Double = 1) {
        bytes.withUnsafeBytes { b in
            let stride = format.pixelFormat == .mjpeg ? 0 : format.width * 2
            let frame = RawFrame(format: format, bytes: b, stride: stride, sequence: 0, timestamp: t)
            // As the frame pipeline offers it: taken only if the output wants it.
            let now = Clock.monotonic()
            if wants(frame, now: now) { take(frame, FrameContext(sequence: 0, transform: FrameTransform(zoom: zoom), now: now)) }
        }
    }

    /// Offers a frame and waits (bounded) until the recorder has caught up with it.
    func offerAndWait(_ bytes: [UInt8], format: VideoFormat, at t: Double, zoom: Double = 1) async throws {
        offer(bytes, format: format, at: t, zoom: zoom)
        let deadline = Date().addingTimeInterval(10)
        while backlog > 0 && status.active {
            guard Date() < deadline else { throw TestError("frame not written in 10 s") }
            try await Task.sleep(nanoseconds: 1_000_000)
        }
    }
}

/// Runs a tool on a thread of its own (never on the concurrency pool: every suite's servers
/// need it) and answers its standard output.
func run(_ tool: String, _ args: [String]) async throws -> Data {
    try await withCheckedThrowingContinuation { (c: CheckedContinuation<Data, Error>) in
        Thread { c.resume(with: Result { try runBlocking(tool, args) }) }.start()
    }
}

private func runBlocking(_ tool: String, _ args: [String]) throws -> Data {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: tool)
    p.arguments = args
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { throw TestError("\(tool) \(args.joined(separator: " ")) exited \(p.terminationStatus)") }
    return data
}

/// ffprobe's view of a movie: codec, size, frames decoded, duration, rotation.
struct Probe {
    var codec: String
    var width: Int
    var height: Int
    var frames: Int
    var duration: Double
    var rotation: Int?

    static func of(_ path: String) async throws -> Probe { try Probe(data: try await run("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0",
                                                 "-show_entries", "stream=codec_name,width,height,nb_read_frames:stream_side_data=rotation:format=duration",
                                                 "-of", "json", path])) }

    private init(data: Data) throws {
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let stream = try #require((json["streams"] as? [[String: Any]])?.first)
        codec = stream["codec_name"] as? String ?? ""
        width = stream["width"] as? Int ?? 0
        height = stream["height"] as? Int ?? 0
        frames = Int(stream["nb_read_frames"] as? String ?? "") ?? -1
        duration = Double((json["format"] as? [String: Any])?["duration"] as? String ?? "") ?? -1
        rotation = (stream["side_data_list"] as? [[String: Any]])?.compactMap { $0["rotation"] as? Int }.first
    }
}
