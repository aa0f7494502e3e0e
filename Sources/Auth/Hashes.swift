// Hashes and randomness from well-kept libraries: yescrypt through libcrypt for the
// passwords Basic checks (slow and salted), SHA-256 and MD5 through GnuTLS for Digest's
// HA1 and for token fingerprints, HMAC-SHA1 for TURN's per-session passwords, GnuTLS's
// random generator for tokens.

import CCrypt
import CGnuTLSCrypto
import SystemSupport
#if canImport(Glibc)
import Glibc
#endif

public enum AuthError: Error, Equatable, CustomStringConvertible {
    case system(SystemError)
    case library(call: String, code: Int32)

    public var description: String {
        switch self {
        case .system(let e): e.description
        case .library(let call, let code): "\(call) failed (\(code))"
        }
    }
}

public enum Hashes {
    /// A yescrypt hash of `password` with a fresh salt from libcrypt's own source.
    public static func passwordHash(_ password: String) throws(AuthError) -> String {
        var setting = [CChar](repeating: 0, count: Int(CRYPT_GENSALT_OUTPUT_SIZE))
        guard crypt_gensalt_rn("$y$", 0, nil, 0, &setting, Int32(setting.count)) != nil else {
            throw .system(.last("crypt_gensalt_rn"))
        }
        return try crypt(password, setting: setting)
    }

    /// True when `password` hashes to `stored` (any scheme libcrypt knows); constant time
    /// in the comparison.
    public static func verify(_ password: String, against stored: String) -> Bool {
        guard let computed = try? crypt(password, setting: stored.utf8CString.map { $0 }) else { return false }
        return constantTimeEqual(Array(computed.utf8), Array(stored.utf8))
    }

    private static func crypt(_ password: String, setting: [CChar]) throws(AuthError) -> String {
        var data = crypt_data()
        let out = withUnsafeMutablePointer(to: &data) { p in
            crypt_r(password, setting, p).map { String(cString: $0) }
        }
        // libcrypt answers a failure with NULL or a string starting with '*'.
        guard let out, !out.hasPrefix("*") else { throw .system(.last("crypt_r")) }
        return out
    }

    public enum Algorithm: String, Sendable, CaseIterable {
        case md5 = "MD5", sha256 = "SHA-256"
        var gnutls: gnutls_digest_algorithm_t { self == .md5 ? GNUTLS_DIG_MD5 : GNUTLS_DIG_SHA256 }
        public var size: Int { self == .md5 ? 16 : 32 }
    }

    public static func digest(_ algorithm: Algorithm, _ text: String) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: algorithm.size)
        let bytes = Array(text.utf8)
        let rc = bytes.withUnsafeBytes { b in gnutls_hash_fast(algorithm.gnutls, b.baseAddress, b.count, &out) }
        precondition(rc == 0, "gnutls_hash_fast: \(rc)")  // only fails for an unknown algorithm
        return out
    }

    /// SHA-1, for WS-Security's PasswordDigest (the profile's, not a choice of ours).
    public static func sha1(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 20)
        let rc = bytes.withUnsafeBytes { b in gnutls_hash_fast(GNUTLS_DIG_SHA1, b.baseAddress, b.count, &out) }
        precondition(rc == 0, "gnutls_hash_fast: \(rc)")
        return out
    }

    /// HMAC-SHA1 of `message` under `key`, for the TURN REST scheme's passwords (coturn's
    /// `use-auth-secret` checks exactly this; the scheme's, not a choice of ours).
    public static func hmacSHA1(key: String, _ message: String) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 20)
        let k = Array(key.utf8), m = Array(message.utf8)
        let rc = k.withUnsafeBytes { kb in
            m.withUnsafeBytes { mb in gnutls_hmac_fast(GNUTLS_MAC_SHA1, kb.baseAddress, kb.count, mb.baseAddress, mb.count, &out) }
        }
        precondition(rc == 0, "gnutls_hmac_fast: \(rc)")  // only fails for an unknown algorithm
        return out
    }

    /// Digest's HA1 = H(user:realm:password), hex.
    public static func ha1(_ algorithm: Algorithm, user: String, realm: String, password: String) -> String {
        hex(digest(algorithm, "\(user):\(realm):\(password)"))
    }

    /// `count` random bytes, hex: GnuTLS's key-grade generator.
    public static func randomHex(_ count: Int) throws(AuthError) -> String {
        var bytes = [UInt8](repeating: 0, count: count)
        let rc = gnutls_rnd(GNUTLS_RND_KEY, &bytes, count)
        guard rc == 0 else { throw .library(call: "gnutls_rnd", code: rc) }
        return hex(bytes)
    }

    public static func sha256Hex(_ text: String) -> String { hex(digest(.sha256, text)) }

    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }

    public static func bytes(hex: String) -> [UInt8]? {
        let u = Array(hex.utf8)
        guard u.count % 2 == 0 else { return nil }
        func v(_ c: UInt8) -> UInt8? {
            switch c { case 48...57: c - 48; case 97...102: c - 87; case 65...70: c - 55; default: nil }
        }
        var out = [UInt8]()
        for i in stride(from: 0, to: u.count, by: 2) {
            guard let h = v(u[i]), let l = v(u[i + 1]) else { return nil }
            out.append(h << 4 | l)
        }
        return out
    }

    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}
