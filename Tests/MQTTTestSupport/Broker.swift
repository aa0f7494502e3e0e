// Debian's mosquitto, started by a test on loopback: a port of its own (found free, then
// handed to the broker; a broker that loses the port to someone else fails to start and is
// started again on another), optional password file and TLS, stopped, killed and restarted
// on the same port as a real broker is. Runs as the invoking user: a broker started as root
// drops to `mosquitto` and could not read the test's key files.

import Foundation
import Glibc
import SystemSupport

public final class Broker: @unchecked Sendable {  // one test drives it; Process is not Sendable
    public let directory: String
    public private(set) var port: Int
    public let tls: Bool
    private var process: Process?
    private let config: String
    /// Settings of the listener (TLS): they follow its `listener` line.
    private let listenerLines: String

    /// `users`: name → password (a password file, anonymous refused). `tls`: a CA, a server
    /// certificate for 127.0.0.1, and a client certificate (`clientCertificate`, `clientKey`).
    /// `port`: this one (0: a free one).
    public init(users: [String: String] = [:], tls: Bool = false, port: Int = 0) throws {
        directory = NSTemporaryDirectory() + "vf-broker-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.tls = tls
        self.port = port
        var lines = ["allow_anonymous \(users.isEmpty)", "persistence false", "log_dest stderr", "log_type error",
                     "log_type warning", "user \(Self.userName())"]
        if !users.isEmpty {
            let file = directory + "/passwords"
            FileManager.default.createFile(atPath: file, contents: nil)
            for (name, password) in users { try Self.run("/usr/bin/mosquitto_passwd", ["-b", file, name, password]) }
            lines.append("password_file \(file)")
        }
        var listener: [String] = []
        if tls {
            try Self.makeCertificates(in: directory)
            listener = ["cafile \(directory)/ca.pem", "certfile \(directory)/server.pem", "keyfile \(directory)/server.key",
                        "require_certificate true"]
        }
        config = lines.joined(separator: "\n") + "\n"
        listenerLines = listener.map { $0 + "\n" }.joined()
        try start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    public var caFile: String { directory + "/ca.pem" }
    public var clientCertificate: String { directory + "/client.pem" }
    public var clientKey: String { directory + "/client.key" }
    public var url: String { "\(tls ? "mqtts" : "mqtt")://127.0.0.1:\(port)" }

    /// Starts it (on its old port when it had one); returns once it accepts connections.
    public func start() throws {
        for _ in 0..<5 {
            if port == 0 { port = Self.freePort() }
            let file = directory + "/mosquitto.conf"
            try (config + "listener \(port) 127.0.0.1\n" + listenerLines).write(toFile: file, atomically: true, encoding: .utf8)
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
            p.arguments = ["-c", file]
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            process = p
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline && p.isRunning {
                if Self.accepts(port) { return }
                usleep(10_000)
            }
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            port = 0  // taken meanwhile: another port
        }
        throw BrokerError(message: "mosquitto did not start")
    }

    /// Gone at once, as a crashed or unplugged broker is. SIGKILL: the broker inherits the
    /// test process's blocked signals (Foundation's Process spawns with its mask), SIGTERM
    /// among them.
    public func stop() {
        guard let p = process else { return }
        kill(p.processIdentifier, SIGKILL)
        // Polled, not waitUntilExit: the caller is an async test on Swift's cooperative pool,
        // and a SIGKILLed process is reaped in milliseconds.
        let deadline = Date().addingTimeInterval(10)
        while p.isRunning && Date() < deadline { usleep(2_000) }
        process = nil
    }

    public var pid: Int32 { process?.processIdentifier ?? 0 }

    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        return (try? IPv4SocketAddress.loopback(port: UInt16(port)).connect(fd)) != nil
    }

    public static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        try? IPv4SocketAddress.loopback(port: 0).bind(fd)
        return Int((try? IPv4SocketAddress.local(of: fd))?.port ?? 0)
    }

    static func userName() -> String {
        guard let pw = getpwuid(geteuid()) else { return "root" }
        return String(cString: pw.pointee.pw_name)
    }

    static func run(_ tool: String, _ arguments: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = arguments
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw BrokerError(message: "\(tool) \(arguments.joined(separator: " ")) exited \(p.terminationStatus)") }
    }

    /// A CA, a server certificate for 127.0.0.1 and a client certificate, with openssl.
    static func makeCertificates(in d: String) throws {
        let o = "/usr/bin/openssl"
        try run(o, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=viewfinder-test-ca",
                    "-keyout", "\(d)/ca.key", "-out", "\(d)/ca.pem"])
        for (name, cn) in [("server", "127.0.0.1"), ("client", "viewfinder-test-client")] {
            try run(o, ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=\(cn)", "-keyout", "\(d)/\(name).key", "-out", "\(d)/\(name).csr"])
            try "subjectAltName=IP:127.0.0.1\n".write(toFile: "\(d)/\(name).ext", atomically: true, encoding: .utf8)
            try run(o, ["x509", "-req", "-in", "\(d)/\(name).csr", "-CA", "\(d)/ca.pem", "-CAkey", "\(d)/ca.key", "-CAcreateserial",
                        "-days", "2", "-extfile", "\(d)/\(name).ext", "-out", "\(d)/\(name).pem"])
        }
    }
}

public struct BrokerError: Error, CustomStringConvertible {
    public var message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}
