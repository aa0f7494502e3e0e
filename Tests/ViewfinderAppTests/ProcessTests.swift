import Foundation
import HTTPServer
import Testing

/// The built `viewfinder` executable, run as users run it.
@Suite(.serialized) struct ProcessTests {
    static var binary: String {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("viewfinder").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        return packageRoot + "/.build/debug/viewfinder"
    }

    /// Starts viewfinder on port 0 and returns it with the port it printed.
    func launch(_ args: [String] = []) async throws -> (Process, Int, Pipe) {
        try await offload { try self.launchSync(args) }
    }

    func launchSync(_ args: [String]) throws -> (Process, Int, Pipe) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binary)
        p.arguments = ["--port", "0", "--cameras", "synthetic", "--preset", "352x288",
                       "--public-directory", packageRoot + "/Public", "--log-level", "warning"] + args
        p.currentDirectoryURL = URL(fileURLWithPath: NSTemporaryDirectory())
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // The first stdout line names the port; read it with a deadline.
        let fd = out.fileHandleForReading.fileDescriptor
        var line = [UInt8]()
        let deadline = Date().addingTimeInterval(30)
        while !line.contains(10) && Date() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 500) > 0 else { continue }
            var b = [UInt8](repeating: 0, count: 256)
            let n = read(fd, &b, 256)
            if n <= 0 { break }
            line += b[0..<n]
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let r = text.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression),
              let port = Int(text[r].split(separator: ":")[1]) else {
            p.terminate()
            throw TestError("no port in: \(text)")
        }
        return (p, port, err)
    }

    func waitForExit(_ p: Process, timeout: Double) async -> Bool {
        (try? await offload { self.waitForExitSync(p, timeout: timeout) }) ?? false
    }

    func waitForExitSync(_ p: Process, timeout: Double) -> Bool {
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { p.waitUntilExit(); done.signal() }
        return done.wait(timeout: .now() + timeout) == .success
    }

    @Test func sigtermEndsStreamsAndExitsZero() async throws {
        let (p, port, _) = try await launch()
        let viewer = try TestConnection(port: port)
        try viewer.request("GET", "/stream")
        try await viewer.read { Multipart.parse($0).parts.count >= 2 }
        kill(p.processIdentifier, SIGTERM)
        #expect(try await viewer.closedByPeer(timeout: 10), "the stream ends")
        #expect(await waitForExit(p, timeout: 10))
        #expect(p.terminationReason == .exit && p.terminationStatus == 0)
    }

    @Test func sigintExitsZero() async throws {
        let (p, port, _) = try await launch()
        #expect(try await fetch(port, "/healthz").status == 200)
        kill(p.processIdentifier, SIGINT)
        #expect(await waitForExit(p, timeout: 10))
        #expect(p.terminationStatus == 0)
    }

    /// Runs viewfinder with `args` until it exits (bounded); returns its status and stderr.
    func runToExit(_ args: [String]) async throws -> (status: Int32, stderr: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binary)
        p.arguments = args
        let err = Pipe()
        p.standardError = err
        p.standardOutput = Pipe()
        try p.run()
        #expect(await waitForExit(p, timeout: 30), "viewfinder \(args) did not exit")
        let message = String(decoding: try await offload { err.fileHandleForReading.readDataToEndOfFile() }, as: UTF8.self)
        return (p.terminationStatus, message)
    }

    @Test func aBadConfigStopsStartUpNamingTheKey() async throws {
        let path = NSTemporaryDirectory() + "vf-bad-\(UUID().uuidString).json"
        _ = FileManager.default.createFile(atPath: path, contents: Data(#"{"stream": {"quality": 101}}"#.utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (status, message) = try await runToExit(["--config", path, "--port", "0"])
        #expect(status == 2)
        #expect(message.contains("stream.quality: 101 is outside 1…100"), "\(message)")
    }

    @Test func aBadFlagStopsStartUp() async throws {
        let (status, message) = try await runToExit(["--port", "0", "--preset", "enormous"])
        #expect(status == 2)
        #expect(message.contains("session.preset: unknown preset 'enormous'"), "\(message)")
        let (status2, message2) = try await runToExit(["--port", "0", "--fps", "0"])
        #expect(status2 == 2 && message2.contains("--fps"), "\(message2)")
    }

    /// A real client: Debian's ffprobe reads the stream as MJPEG at the configured size.
    @Test func ffprobeReadsTheStream() async throws {
        let (p, port, _) = try await launch()
        defer { p.terminate() }
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        probe.arguments = ["-v", "error", "-rw_timeout", "10000000", "-select_streams", "v:0",
                           "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0",
                           "http://127.0.0.1:\(port)/stream"]
        let out = Pipe()
        probe.standardOutput = out
        try probe.run()
        #expect(await waitForExit(probe, timeout: 60))
        let text = String(decoding: try await offload { out.fileHandleForReading.readDataToEndOfFile() }, as: UTF8.self)
        #expect(probe.terminationStatus == 0)
        #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == "mjpeg,352,288")
    }
}
