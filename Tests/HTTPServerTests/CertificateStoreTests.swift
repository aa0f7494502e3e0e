import Foundation
import Testing
@testable import HTTPServer

/// The C certificate store behind HTTPS: typed errors naming the call and file, and a bad
/// reload leaving the current pair in place.
@Suite struct CertificateStoreTests {
    /// EC keys: made in milliseconds (this runs on a thread Swift concurrency needs).
    static func makePair(_ dir: String, _ name: String, cn: String) throws -> ServerConfiguration.TLSFiles {
        let files = ServerConfiguration.TLSFiles(certificate: "\(dir)/\(name).crt", key: "\(dir)/\(name).key")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=\(cn)", "-days", "1",
                       "-keyout", files.key, "-out", files.certificate]
        p.standardError = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        return files
    }

    @Test func loadsSwapsAndKeepsTheOldPairOnError() throws {
        let dir = NSTemporaryDirectory() + "vf-store-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = try Self.makePair(dir, "a", cn: "a"), b = try Self.makePair(dir, "b", cn: "b")
        let store = CertificateStore()
        try store.load(a)
        let printA = store.fingerprint
        #expect(printA.count == 32 * 3 - 1)

        let missing = ServerConfiguration.TLSFiles(certificate: dir + "/none.crt", key: a.key)
        #expect(throws: TLSError(file: .certificate, path: dir + "/none.crt", call: "open", reason: "No such file or directory")) {
            try store.load(missing)
        }
        #expect(throws: TLSError(file: .key, path: dir, call: "fstat", reason: "Is a directory")) {
            try store.load(.init(certificate: a.certificate, key: dir))
        }
        do {
            try store.load(.init(certificate: a.certificate, key: b.key))
            Issue.record("a key that is not the certificate's was accepted")
        } catch {
            #expect(error.file == .pair && error.call == "gnutls_certificate_set_x509_key_mem2", "\(error)")
        }
        #expect(store.fingerprint == printA, "failed loads keep the current pair")

        try store.load(b)
        #expect(store.fingerprint != printA)
    }
}
