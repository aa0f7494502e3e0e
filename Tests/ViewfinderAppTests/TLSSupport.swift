// Helpers for the HTTPS tests: certificates made with openssl in a temp dir, and external
// clients (curl, openssl s_client, ffprobe) run with a deadline, output in files.

import CaptureTestSupport
import Foundation

/// A directory with a self-signed certificate and key, made by openssl for this test.
struct TestCertificate {
    let directory: String
    var certificate: String { directory + "/cert.pem" }
    var key: String { directory + "/key.pem" }

    /// A fresh pair for `cn`, valid for localhost and 127.0.0.1.
    static func make(cn: String = "localhost") throws -> TestCertificate {
        let dir = NSTemporaryDirectory() + "vf-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let c = TestCertificate(directory: dir)
        try c.write(cn: cn, certificate: c.certificate, key: c.key)
        return c
    }

    /// Writes a new pair for `cn` to the given paths: made beside them, then renamed over
    /// them (as certbot replaces a certificate), so a reader never sees half a file.
    func write(cn: String, certificate: String, key: String) throws {
        let tmpCert = certificate + ".new", tmpKey = key + ".new"
        let r = try runTool("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=\(cn)",
                                                 "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-days", "1",
                                                 "-keyout", tmpKey, "-out", tmpCert])
        guard r.status == 0 else { throw TestError("openssl req: \(r.stderr)") }
        guard rename(tmpKey, key) == 0, rename(tmpCert, certificate) == 0 else { throw TestError("rename: errno \(errno)") }
    }

    /// `openssl x509 -fingerprint -sha256` of a PEM file, e.g. "A0:63:…".
    static func fingerprint(ofFile path: String) throws -> String {
        let r = try runTool("/usr/bin/openssl", ["x509", "-in", path, "-noout", "-fingerprint", "-sha256"])
        guard r.status == 0, let eq = r.stdout.firstIndex(of: "=") else { throw TestError("x509: \(r.stderr)") }
        return r.stdout[r.stdout.index(after: eq)...].trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

/// The SHA-256 fingerprint of the certificate a new TLS connection to `port` is given.
func servedFingerprint(port: Int) throws -> String {
    let dir = NSTemporaryDirectory() + "vf-served-\(UUID().uuidString).pem"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let r = try runTool("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost"],
                        stdin: Data())
    guard let begin = r.stdout.range(of: "-----BEGIN CERTIFICATE-----"),
          let end = r.stdout.range(of: "-----END CERTIFICATE-----") else {
        throw TestError("s_client got no certificate: \(r.stderr)")
    }
    try String(r.stdout[begin.lowerBound..<end.upperBound]).write(toFile: dir, atomically: true, encoding: .utf8)
    return try TestCertificate.fingerprint(ofFile: dir)
}

struct ToolResult {
    var status: Int32
    var stdout: String
    var stderr: String
    var timedOut: Bool
}

/// Runs a program to its end (killed after `timeout`); its output goes through files, so a
/// chatty program never blocks on a full pipe. Blocks: call it through `offload`.
func runTool(_ path: String, _ args: [String], stdin: Data? = nil, timeout: Double = 30) throws -> ToolResult {
    let base = NSTemporaryDirectory() + "vf-tool-\(UUID().uuidString)"
    FileManager.default.createFile(atPath: base + ".out", contents: nil)
    FileManager.default.createFile(atPath: base + ".err", contents: nil)
    defer {
        try? FileManager.default.removeItem(atPath: base + ".out")
        try? FileManager.default.removeItem(atPath: base + ".err")
    }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    p.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: base + ".out"))
    p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: base + ".err"))
    if let stdin {
        let pipe = Pipe()
        p.standardInput = pipe
        try p.run()
        pipe.fileHandleForWriting.write(stdin)
        try pipe.fileHandleForWriting.close()
    } else {
        p.standardInput = FileHandle.nullDevice
        try p.run()
    }
    // Polled on this (offloaded) thread: waitUntilExit on a Dispatch global queue would hold
    // one of the threads Swift concurrency runs on, which the in-process server needs.
    var timedOut = false
    let deadline = TestTime.deadline(timeout)
    while p.isRunning && Date() < deadline { usleep(10_000) }
    if p.isRunning {
        timedOut = true
        p.terminate()
        let grace = TestTime.deadline(5)
        while p.isRunning && Date() < grace { usleep(10_000) }
    }
    let out = (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? ""
    let err = (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? ""
    return ToolResult(status: p.isRunning ? -1 : p.terminationStatus, stdout: out, stderr: err, timedOut: timedOut)
}

/// curl over HTTPS trusting `ca`; extra args before the URL.
func curl(_ ca: String, _ port: Int, _ path: String, _ extra: [String] = [], timeout: Double = 20) async throws -> ToolResult {
    try await offload {
        try runTool("/usr/bin/curl", ["-sS", "--max-time", "15", "--cacert", ca] + extra + ["https://127.0.0.1:\(port)\(path)"],
                    timeout: timeout)
    }
}
