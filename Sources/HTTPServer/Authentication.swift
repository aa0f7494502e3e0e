// What the server offers an application's authentication: the client's address, the
// credentials as sent, libmicrohttpd's Digest checks (RFC 7616 nonces that expire) and the
// 401 challenge. The application decides who may do what (ServerConfiguration.gate); the
// server knows no users and no roles.

import CMicroHTTPD

public enum DigestAlgorithm: String, Sendable, CaseIterable {
    case md5 = "MD5", sha256 = "SHA-256"
    var mhd: MHD_DigestAuthAlgorithm { MHD_DigestAuthAlgorithm(rawValue: self == .md5 ? 1 : 2)! }  // MHD_DIGEST_ALG_MD5, _SHA256
}

public enum DigestCheck: Sendable, Equatable {
    case valid
    case invalid
    /// Right credentials on an expired nonce: the client retries with a fresh one.
    case stale
}

/// A 401's `WWW-Authenticate` challenges: Basic and/or Digest for `realm`.
public struct AuthChallenge: Sendable, Equatable {
    public var realm: String
    public var basic: Bool
    public var digest: DigestAlgorithm?
    public var stale: Bool
    public init(realm: String, basic: Bool = true, digest: DigestAlgorithm? = .md5, stale: Bool = false) {
        self.realm = realm; self.basic = basic; self.digest = digest; self.stale = stale
    }
}

/// Digest as libmicrohttpd checks it, for the request being gated (valid only during the
/// gate call: it refers to the live connection).
public struct DigestAuthorization {
    let connection: OpaquePointer
    /// The username of a Digest Authorization header, if there is one.
    public var username: String? {
        guard let p = MHD_digest_auth_get_username(connection) else { return nil }
        defer { MHD_free(p) }
        return String(cString: p)
    }

    /// Checks the request's Digest response against the user's HA1 (H(user:realm:password));
    /// a nonce older than `nonceLifetime` seconds is stale.
    public func check(realm: String, username: String, ha1: [UInt8], algorithm: DigestAlgorithm, nonceLifetime: UInt32) -> DigestCheck {
        let rc = ha1.withUnsafeBufferPointer { h in
            MHD_digest_auth_check_digest2(connection, realm, username, h.baseAddress, h.count, nonceLifetime, algorithm.mhd)
        }
        switch rc {
        case Int32(MHD_Result.YES.rawValue): return .valid
        case MHD_INVALID_NONCE: return .stale
        default: return .invalid
        }
    }
}

/// Decides each request before it is routed: nil lets it through (with `principal` set on
/// the request, if any), a response answers it instead (401 with a challenge, 403, 429).
public typealias RequestGate = @Sendable (_ request: inout Request, _ digest: DigestAuthorization) -> Response?
