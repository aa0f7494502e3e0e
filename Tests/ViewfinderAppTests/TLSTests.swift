import CaptureTestSupport
import Foundation
import HTTPServer
import JPEG
import Testing
@testable import ViewfinderApp

/// HTTPS in-process (server.tls), driven by real clients: curl, openssl s_client, ffprobe.
@Suite struct TLSTests {
    /// Runs the application with server.tls set to a fresh certificate.
    func withTLSServer(_ edit: (inout Configuration) -> Void = { _ in },
                       _ body: (Application, Int, TestCertificate) async throws -> Void) async throws {
        let cert = try await offload { try TestCertificate.make() }
        defer { cert.remove() }
        try await withServer({ $0.server.tls = .init(certificate: cert.certificate, key: cert.key); edit(&$0) }) { app, port in
            try await body(app, port, cert)
        }
    }

    @Test func curlGetsHealthzAndSnapshotOverHTTPS() async throws {
        try await withTLSServer { _, port, cert in
            let h = try await curl(cert.certificate, port, "/healthz")
            #expect(h.status == 0, "\(h.stderr)")
            #expect(h.stdout == #"{"status":"ok"}"#)
            let file = cert.directory + "/snap.jpg"
            let s = try await curl(cert.certificate, port, "/snapshot", ["-o", file, "-w", "%{http_code} %{content_type}"])
            #expect(s.status == 0 && s.stdout == "200 image/jpeg", "\(s.stdout) \(s.stderr)")
            let size = try JPEGDecoder.size(of: [UInt8](try Data(contentsOf: URL(fileURLWithPath: file))))
            #expect(size.width == 352 && size.height == 288)
        }
    }

    /// TLS 1.2 and 1.3 only. The client is set to allow TLS 1.1 itself (OpenSSL's security
    /// level 0), and the same client settings with TLS 1.2 succeed: the refusal is the server's.
    @Test func tls11IsRefused() async throws {
        try await withTLSServer { _, port, cert in
            let old = try await curl(cert.certificate, port, "/healthz", ["--tlsv1.1", "--tls-max", "1.1", "--ciphers", "DEFAULT:@SECLEVEL=0"])
            #expect(old.status != 0 && old.stdout.isEmpty, "curl --tls-max 1.1 must fail: \(old.stdout)")
            let ok = try await curl(cert.certificate, port, "/healthz", ["--tlsv1.2", "--tls-max", "1.2", "--ciphers", "DEFAULT:@SECLEVEL=0"])
            #expect(ok.status == 0 && ok.stdout.contains("ok"), "TLS 1.2 with the same client settings: \(ok.stderr)")
            for (version, accepted) in [("-tls1_1", false), ("-tls1_2", true), ("-tls1_3", true)] {
                let r = try await offload {
                    try runTool("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", version, "-cipher", "DEFAULT:@SECLEVEL=0"],
                                stdin: Data())
                }
                #expect((r.status == 0) == accepted, "s_client \(version): status \(r.status)")
            }
        }
    }

    /// Plain HTTP to the TLS port: the handshake fails, the connection closes, nothing is
    /// answered in the clear, and the server goes on serving HTTPS.
    @Test func plainHTTPToTheTLSPortClosesCleanly() async throws {
        try await withTLSServer { app, port, cert in
            for _ in 0..<3 {
                let c = try TestConnection(port: port)
                try c.request("GET", "/healthz")
                #expect(try await c.closedByPeer(timeout: TestTime.patience), "the server closes the connection")
                #expect(c.status == 0 && c.body.isEmpty, "no HTTP answer on the TLS port")
            }
            let plainCurl = try await offload { try runTool("/usr/bin/curl", ["-sS", "--max-time", "5", "http://127.0.0.1:\(port)/healthz"]) }
            #expect(plainCurl.status != 0 && !plainCurl.timedOut, "\(plainCurl.stderr)")
            let h = try await curl(cert.certificate, port, "/healthz")
            #expect(h.status == 0 && h.stdout == #"{"status":"ok"}"#, "still serving HTTPS: \(h.stderr)")
            #expect(await eventually { app.server?.connectionCount == 0 }, "the failed connections are gone")
        }
    }

    /// A real client: ffprobe (built with GnuTLS) verifies the certificate and reads the stream,
    /// signing in with the credentials in its URL as an ffmpeg user would; without them, 401.
    @Test func ffprobeReadsTheStreamOverHTTPSWithCredentials() async throws {
        let accounts = try AuthLiveTests.accounts()
        try await withTLSServer({ $0.auth = accounts }) { _, port, cert in
            func probe(_ userinfo: String) async throws -> ToolResult {
                try await offload {
                    try runTool("/usr/bin/ffprobe", ["-v", "error", "-rw_timeout", String(Int(10_000_000 * TestTime.scale)), "-tls_verify", "1", "-ca_file", cert.certificate,
                                                     "-select_streams", "v:0", "-show_entries", "stream=codec_name,width,height",
                                                     "-of", "csv=p=0", "https://\(userinfo)127.0.0.1:\(port)/stream"], timeout: 60)
                }
            }
            let r = try await probe("cam:ffmpeg1@")
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "mjpeg,352,288")
            let anonymous = try await probe("")
            #expect(anonymous.status != 0 && anonymous.stderr.contains("401"), "\(anonymous.stderr)")
        }
    }

    /// Unreadable or bad files stop start-up, naming the key, the path and the failing call.
    @Test func badFilesStopStartUpNamingTheKey() async throws {
        let cert = try await offload { try TestCertificate.make() }
        defer { cert.remove() }
        let other = try await offload { try TestCertificate.make(cn: "other") }
        defer { other.remove() }
        let garbage = cert.directory + "/garbage.pem"
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: garbage))
        let cases: [(ViewfinderApp.Configuration.TLS, String)] = [
            (.init(certificate: cert.directory + "/missing.pem", key: cert.key),
             "server.tls.certificate: \(cert.directory)/missing.pem: open failed: No such file or directory"),
            (.init(certificate: cert.certificate, key: cert.directory + "/missing.pem"),
             "server.tls.key: \(cert.directory)/missing.pem: open failed: No such file or directory"),
            (.init(certificate: garbage, key: cert.key),
             "server.tls.certificate: \(garbage): gnutls_pcert_list_import_x509_raw failed"),
            (.init(certificate: cert.certificate, key: garbage),
             "server.tls.key: \(garbage): gnutls_privkey_import_x509_raw failed"),
            (.init(certificate: cert.certificate, key: other.key),
             "server.tls: \(cert.certificate), \(other.key): gnutls_certificate_set_x509_key_mem2 failed"),
        ]
        for (tls, message) in cases {
            let app = try Application(configuration: testConfiguration { $0.server.tls = tls })
            do {
                try await app.start()
                Issue.record("started with \(tls)")
            } catch {
                #expect("\(error)".hasPrefix(message), "\(error)")
            }
            await app.stop()
        }
    }

    @Test func configReadsServerTLSStrictly() throws {
        let c = try ViewfinderApp.Configuration.parse(Array(#"{"server": {"tls": {"certificate": "c.pem", "key": "k.pem"}}}"#.utf8))
        #expect(c.server.tls == .init(certificate: "c.pem", key: "k.pem"))
        let bad: [(String, String)] = [
            (#"{"server": {"tls": {"certificate": "c.pem"}}}"#, "server.tls.key: required (a PEM file)"),
            (#"{"server": {"tls": {"certificate": "c.pem", "key": "k.pem", "chain": "x"}}}"#, "server.tls.chain: unknown key"),
            (#"{"server": {"tls": {"certificate": 1, "key": "k.pem"}}}"#, "server.tls.certificate: expected a string, found a number"),
            (#"{"server": {"tls": "on"}}"#, "server.tls: expected an object, found a string"),
        ]
        for (json, message) in bad {
            #expect(throws: ViewfinderApp.Configuration.Error(description: message), "\(json)") {
                try ViewfinderApp.Configuration.parse(Array(json.utf8))
            }
        }
    }
}
