// The accounts, credentials and limits, without a server.

import Foundation
import Testing
@testable import Auth

@Suite struct AuthTests {
    let realm = "Viewfinder"

    func authenticator() throws -> Authenticator {
        var s = AuthSettings()
        s.mode = .accounts
        s.users = [try UserRecord.make(name: "ann", role: .operator, password: "s3cret pass", realm: realm)]
        s.tokens = [TokenRecord(name: "octo", role: .viewer, sha256: Hashes.sha256Hex("vf_token"))]
        return Authenticator(s)
    }

    let noDigest = DigestVerifier(username: nil) { _, _, _ in .invalid }

    @Test func recordsHoldNoPlaintext() throws {
        let u = try UserRecord.make(name: "ann", role: .viewer, password: "s3cret pass", realm: realm)
        #expect(u.passwordHash.hasPrefix("$y$"), "yescrypt")
        #expect(!"\(u)".contains("s3cret"))
        #expect(u.digestMD5 == Hashes.hex(Hashes.digest(.md5, "ann:Viewfinder:s3cret pass")) && u.digestMD5.count == 32)
        #expect(u.digestSHA256.count == 64)
        let (token, record) = try TokenRecord.make(name: "ha", role: .viewer)
        #expect(token.count > 40 && record.sha256 == Hashes.sha256Hex(token) && !record.sha256.contains(token))
    }

    @Test func knownDigests() {
        // RFC 1321 and FIPS 180-2 test vectors, through GnuTLS.
        #expect(Hashes.hex(Hashes.digest(.md5, "abc")) == "900150983cd24fb0d6963f7d28e17f72")
        #expect(Hashes.sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test(arguments: [
        ("Basic YW5uOnMzY3JldCBwYXNz", "authenticated"),        // ann:s3cret pass
        ("Basic YW5uOndyb25n", "failed"),                         // ann:wrong
        ("Basic Ym9iOnMzY3JldCBwYXNz", "failed"),                 // bob: unknown
        ("Basic !!!", "failed"), ("Basic Zm9v", "failed"),         // not base64; no colon
        ("Bearer vf_token", "authenticated"), ("Bearer nope", "failed"), ("Bearer", "failed"),
        ("Negotiate abc", "failed"), ("Digest username=\"ann\", algorithm=SHA-512", "failed"),
    ])
    func credentials(_ header: String, _ expected: String) throws {
        let a = try authenticator()
        let outcome = a.authenticate(Credentials.parse(authorization: header, queryToken: nil), digest: noDigest, now: 0)
        switch outcome {
        case .authenticated: #expect(expected == "authenticated")
        case .failed: #expect(expected == "failed")
        default: Issue.record("unexpected \(outcome)")
        }
    }

    @Test func queryTokenAndNothing() throws {
        let a = try authenticator()
        #expect(a.authenticate(.parse(authorization: nil, queryToken: "vf_token"), digest: noDigest, now: 0) == .authenticated(name: "octo", role: .viewer))
        #expect(a.authenticate(.parse(authorization: nil, queryToken: nil), digest: noDigest, now: 0) == .missing)
    }

    @Test func digestUsesTheHA1OfTheAlgorithmAsked() throws {
        let a = try authenticator()
        var seen: (String, [UInt8], Bool)?
        let verifier = DigestVerifier(username: "ann") { u, h, sha in seen = (u, h, sha); return .valid }
        #expect(a.authenticate(.parse(authorization: #"Digest username="ann", algorithm=SHA-256, nonce="x""#, queryToken: nil),
                               digest: verifier, now: 0) == .authenticated(name: "ann", role: .operator))
        #expect(seen?.0 == "ann" && seen?.2 == true && seen?.1 == Hashes.digest(.sha256, "ann:Viewfinder:s3cret pass"))
        let stale = DigestVerifier(username: "ann") { _, _, _ in .stale }
        #expect(a.authenticate(.digest(algorithm: "MD5"), digest: stale, now: 0) == .stale)
    }

    @Test func rolesAndLimits() {
        #expect(Role.operator.allows(.viewer) && Role.viewer.allows(.viewer) && !Role.viewer.allows(.operator))
        let limiter = FailureLimiter(perMinute: 3)
        for t in 0..<3 { limiter.record("127.0.0.3", now: Double(t)) }
        #expect(limiter.retryAfter("127.0.0.3", now: 3) == 57)
        #expect(limiter.retryAfter("127.0.0.4", now: 3) == nil, "another address is not locked out")
        #expect(limiter.retryAfter("127.0.0.3", now: 61) == nil, "a minute later the oldest failure has aged out")
    }
}
