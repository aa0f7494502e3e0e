// HTTPS: the certificate store that every handshake reads (shim.c) and its typed errors.
// A reload loads and checks the new pair completely before swapping it in; a bad file
// leaves the running certificate in place.

import CMicroHTTPD
import Foundation

/// Loading a certificate or key failed: which file, which call, and why.
public struct TLSError: Error, CustomStringConvertible, Equatable, Sendable {
    public enum File: String, Sendable {
        case certificate, key
        /// The two together (the key does not belong to the certificate).
        case pair
    }
    public var file: File
    public var path: String
    /// The failing call: `open`, `read`, `gnutls_pcert_list_import_x509_raw`, ...
    public var call: String
    public var reason: String

    public var description: String { "\(path): \(call) failed: \(reason)" }
}

/// Owns the C store; outlives the daemon that calls into it.
final class CertificateStore: @unchecked Sendable {
    let raw: OpaquePointer

    init() {
        guard let raw = cmhd_tls_create() else { fatalError("cmhd_tls_create: out of memory") }
        self.raw = raw
    }

    deinit { cmhd_tls_destroy(raw) }

    /// Loads the pair and makes it the one new handshakes get.
    func load(_ files: ServerConfiguration.TLSFiles) throws(TLSError) {
        var e = cmhd_tls_error()
        guard cmhd_tls_load(raw, files.certificate, files.key, &e) != 0 else { return }
        let file: TLSError.File = e.file == 0 ? .certificate : e.file == 1 ? .key : .pair
        let path = file == .key ? files.key : file == .certificate ? files.certificate : "\(files.certificate), \(files.key)"
        let reason = e.err_no != 0 ? String(cString: strerror(e.err_no)) : String(cString: cmhd_tls_strerror(e.gnutls_code))
        throw TLSError(file: file, path: path, call: e.call.map { String(cString: $0) } ?? "?", reason: reason)
    }

    /// SHA-256 of the current leaf certificate, hex pairs joined by colons (as openssl prints it).
    var fingerprint: String {
        var bytes = [UInt8](repeating: 0, count: 32)
        guard cmhd_tls_fingerprint(raw, &bytes) == 0 else { return "" }
        return bytes.map { String(format: "%02X", $0) }.joined(separator: ":")
    }
}
