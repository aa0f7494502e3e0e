import CaptureTestSupport
import Foundation
import Testing

/// SIGHUP on the built binary: the certificate is read again without dropping streams.
@Suite(.serialized) struct TLSReloadTests {
    /// Appends what arrives on `fd` to `text` until `done(text)` or the deadline.
    func readUntil(_ fd: Int32, timeout: Double, _ done: (String) -> Bool) -> String {
        var bytes = [UInt8]()
        let deadline = TestTime.deadline(timeout)
        while !done(String(decoding: bytes, as: UTF8.self)) && Date() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 200) > 0 else { continue }
            var b = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &b, b.count)
            if n <= 0 { break }
            bytes += b[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
    }

    @Test func sighupSwapsTheCertificateWhileAStreamKeepsRunning() async throws {
        let first = try await offload { try TestCertificate.make(cn: "first") }
        defer { first.remove() }
        let config = first.directory + "/config.json"
        try Data(#"{"server": {"tls": {"certificate": "\#(first.certificate)", "key": "\#(first.key)"}}}"#.utf8)
            .write(to: URL(fileURLWithPath: config))
        let firstPrint = try await offload { try TestCertificate.fingerprint(ofFile: first.certificate) }
        let (server, port, err) = try await ProcessTests().launch(["--config", config])
        defer { server.terminate() }
        #expect(try await offload { try servedFingerprint(port: port) } == firstPrint)

        // A viewer that connected under the first certificate.
        let streamFile = first.directory + "/stream.bin"
        let viewer = Process()
        viewer.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        viewer.arguments = ["-sS", "-N", "--max-time", "60", "--cacert", first.certificate, "-o", streamFile,
                            "https://127.0.0.1:\(port)/stream"]
        viewer.standardError = FileHandle.nullDevice
        try viewer.run()
        defer { viewer.terminate() }
        #expect(await eventually(timeout: TestTime.patience) { fileSize(streamFile) > 20_000 }, "the stream runs")

        // A new certificate on disk (renamed over the old files), then SIGHUP.
        let secondPrint = try await offload { () -> String in
            try first.write(cn: "second", certificate: first.certificate, key: first.key)
            return try TestCertificate.fingerprint(ofFile: first.certificate)
        }
        #expect(secondPrint != firstPrint)
        kill(server.processIdentifier, SIGHUP)
        #expect(await eventually(timeout: TestTime.patience) { (try? await offload { try servedFingerprint(port: port) }) == secondPrint },
                "new connections get the new certificate")
        let fresh = try await curl(first.certificate, port, "/healthz")
        #expect(fresh.status == 0 && fresh.stdout.contains("ok"), "verified against the new certificate: \(fresh.stderr)")

        // The viewer is the same connection and still receives frames.
        let before = fileSize(streamFile)
        #expect(await eventually(timeout: TestTime.patience) { fileSize(streamFile) > before + 20_000 }, "frames keep coming after the reload")
        #expect(viewer.isRunning, "the stream was not dropped")

        // A bad file on SIGHUP: logged, and the second certificate stays.
        try Data("-----BEGIN CERTIFICATE-----\nbroken\n".utf8).write(to: URL(fileURLWithPath: first.certificate))
        kill(server.processIdentifier, SIGHUP)
        let log = try await offload {
            self.readUntil(err.fileHandleForReading.fileDescriptor, timeout: TestTime.patience) { $0.contains("reload failed") }
        }
        #expect(log.contains("TLS certificate reload failed, keeping the previous one: server.tls.certificate: \(first.certificate)"), "\(log)")
        #expect(try await offload { try servedFingerprint(port: port) } == secondPrint, "the old certificate is kept")
        let after = fileSize(streamFile)
        #expect(await eventually(timeout: TestTime.patience) { fileSize(streamFile) > after + 20_000 }, "the stream still runs")
        #expect(viewer.isRunning)

        kill(server.processIdentifier, SIGTERM)
        try #require(await waitForExit(server, timeout: ProcessTests.stopTimeout))
        #expect(server.terminationStatus == 0)
    }
}
