// Running as a service: sd_notify over a test NOTIFY_SOCKET (READY=1 once listening,
// STOPPING=1 on SIGTERM, WATCHDOG=1 at half of WATCHDOG_USEC), in the notifier and in the
// built binary.

import CameraCore
import CaptureTestSupport
import Foundation
import HTTPServer
import Testing
@testable import ViewfinderApp
import SystemSupport

/// A SOCK_DGRAM socket bound where a test's NOTIFY_SOCKET points: a path in a fresh
/// directory, or an abstract name ('@…').
final class NotifyListener: @unchecked Sendable {
    let fd: Int32
    let address: String
    private let directory: String?

    init(abstract: Bool = false) throws {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError.last("socket") }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var name: [UInt8]
        if abstract {
            address = "@viewfinder-test-\(UUID().uuidString)"
            directory = nil
            name = Array(address.utf8)
            name[0] = 0
        } else {
            let dir = NSTemporaryDirectory() + "vf-notify-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            directory = dir
            address = dir + "/notify"
            name = Array(address.utf8) + [0]
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: name) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + name.count)
        let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard rc == 0 else { throw SystemError.last("bind \(address)") }
    }

    deinit {
        close(fd)
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// The next datagram, or nil after `timeout` seconds.
    func receive(timeout: Double) -> String? {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, Int32(timeout * 1000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n < 0 ? nil : String(decoding: buffer[0..<n], as: UTF8.self)
    }

    /// Datagrams until one starts with `prefix` (returned), or nil at the deadline.
    func await(_ prefix: String, timeout: Double) async -> String? {
        (try? await offload { () -> String? in
            let deadline = TestTime.deadline(timeout)
            while Date() < deadline {
                if let m = self.receive(timeout: deadline.timeIntervalSinceNow), m.hasPrefix(prefix) { return m }
            }
            return nil
        }) ?? nil
    }
}

@Suite struct SystemdNotifierTests {
    @Test func onlyAPathOrAnAbstractNameIsANotifySocket() {
        #expect(SystemdNotifier(environment: [:]) == nil)
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": ""]) == nil)
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": "relative/path"]) == nil)
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": "/run/systemd/notify"])?.address == "/run/systemd/notify")
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": "@abstract"])?.address == "@abstract")
    }

    @Test func theWatchdogPingsAtHalfItsTimeoutAndOnlyForItsProcess() {
        #expect(SystemdNotifier.watchdogInterval(environment: [:]) == nil)
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000"]) == .seconds(15))
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "0"]) == nil)
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "x"]) == nil)
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "42"], pid: 42) == .milliseconds(500))
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "42"], pid: 43) == nil)
    }

    @Test(arguments: [false, true]) func aDatagramReachesThePathOrAbstractSocket(abstract: Bool) throws {
        let listener = try NotifyListener(abstract: abstract)
        let notifier = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": listener.address]))
        try notifier.notify("READY=1\nSTATUS=up")
        #expect(listener.receive(timeout: TestTime.patience) == "READY=1\nSTATUS=up")
    }

    @Test func aMissingSocketIsAnErrorNamingTheCall() throws {
        let notifier = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": "/nonexistent/viewfinder-notify"]))
        #expect(throws: SystemError(call: "sendto /nonexistent/viewfinder-notify", errno: ENOENT)) {
            try notifier.notify("READY=1")
        }
        let long = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": "/" + String(repeating: "x", count: 200)]))
        #expect(throws: SystemError.self) { try long.notify("READY=1") }
    }
}

/// The built binary under a test NOTIFY_SOCKET.
@Suite(.serialized) struct ServiceProcessTests {
    /// Starts `viewfinder --port 0 --cameras synthetic …` with `environment` added.
    func launch(environment: [String: String]) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ProcessTests.binary)
        p.arguments = ["--port", "0", "--cameras", "synthetic", "--preset", "352x288",
                       "--public-directory", packageRoot + "/Public", "--log-level", "warning"]
        p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let cwd = NSTemporaryDirectory() + "vf-service-\(UUID().uuidString)"  // its saved state its own
        try FileManager.default.createDirectory(atPath: cwd, withIntermediateDirectories: true)
        p.currentDirectoryURL = URL(fileURLWithPath: cwd)
        p.standardOutput = Pipe()
        p.standardError = Pipe()
        try p.run()
        return p
    }

    @Test(arguments: [false, true]) func readyOnceListeningAndStoppingOnSIGTERM(abstract: Bool) async throws {
        let listener = try NotifyListener(abstract: abstract)
        let p = try launch(environment: ["NOTIFY_SOCKET": listener.address])
        defer { if p.isRunning { p.terminate() } }
        let ready = try #require(await listener.await("READY=1", timeout: 30), "no READY=1")
        #expect(ready.contains("MAINPID=\(p.processIdentifier)"), "\(ready)")
        // READY=1 comes after the bind: the port it names answers.
        let port = try #require(ready.firstMatch(of: /127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) }, "\(ready)")
        #expect(try await fetch(port, "/healthz").status == 200)
        kill(p.processIdentifier, SIGTERM)
        #expect(await listener.await("STOPPING=1", timeout: TestTime.patience) != nil, "no STOPPING=1")
        // Within the unit's TimeoutStopSec (20 s): a stop right after start-up waits for
        // WebRTC's warm-up (a key pair; the process must not exit under it), which took more
        // than 10 s beside make test's parallel run.
        try #require(await waitForExit(p, timeout: ProcessTests.stopTimeout))
        #expect(p.terminationStatus == 0)
    }

    @Test func watchdogPingsWhileServing() async throws {
        let listener = try NotifyListener()
        let p = try launch(environment: ["NOTIFY_SOCKET": listener.address, "WATCHDOG_USEC": "400000"])
        defer { p.terminate() }
        #expect(await listener.await("READY=1", timeout: 30) != nil)
        // Pings the server sent while this test was slow to read READY=1 (a loaded machine, as
        // under the sanitizers with a soak beside them) are queued in the socket: read them
        // now, so the timing below starts with no backlog.
        while listener.receive(timeout: 0) != nil {}
        let start = Date()
        for _ in 0..<3 { #expect(await listener.await("WATCHDOG=1", timeout: 5) != nil) }
        // Pings 0.2 s apart, well under the 0.4 s timeout each, and not a burst: with no
        // backlog, at most one was already on its way, so the third was sent at least one
        // interval after the queue was emptied.
        #expect(Date().timeIntervalSince(start) > 0.2)
    }
}
