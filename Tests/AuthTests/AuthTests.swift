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

    let noDigest = DigestVerifier(username: nil, method: "GET") { _, _, _ in .invalid }

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
        let verifier = DigestVerifier(username: "ann", method: "GET") { u, h, sha in seen = (u, h, sha); return .valid }
        #expect(a.authenticate(.parse(authorization: #"Digest username="ann", algorithm=SHA-256, nonce="x""#, queryToken: nil),
                               digest: verifier, now: 0) == .authenticated(name: "ann", role: .operator))
        #expect(seen?.0 == "ann" && seen?.2 == true && seen?.1 == Hashes.digest(.sha256, "ann:Viewfinder:s3cret pass"))
        let stale = DigestVerifier(username: "ann", method: "GET") { _, _, _ in .stale }
        #expect(a.authenticate(.digest(DigestAnswer(parameters: "username=\"ann\"")), digest: stale, now: 0) == .stale)
    }

    /// RFC 7616 §3.9.1's worked example (Mufasa, "Circle of Life"), its responses as the RFC
    /// prints them: right for the password, wrong for any change of it, the method or the count.
    @Test func digestAnswersAreCheckedAsRFC7616Computes() {
        let realm = "http-auth@example.org", password = "Circle of Life"
        let common = #"username="Mufasa", realm="http-auth@example.org", uri="/dir/index.html", "#
            + #"nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", nc=00000001, "#
            + #"cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", qop=auth, opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#
        for (algorithm, response) in [(Hashes.Algorithm.md5, "8ca523f5e9506fed4657c9700eebdbec"),
                                      (.sha256, "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1")] {
            let answer = DigestAnswer(parameters: common + #", algorithm=\#(algorithm.rawValue), response="\#(response)""#)
            let ha1 = Hashes.digest(algorithm, "Mufasa:\(realm):\(password)")
            #expect(answer.algorithm == algorithm.rawValue)
            #expect(answer.isRight(ha1: ha1, method: "GET"), "\(algorithm)")
            #expect(!answer.isRight(ha1: Hashes.digest(algorithm, "Mufasa:\(realm):circle of life"), method: "GET"))
            #expect(!answer.isRight(ha1: ha1, method: "POST"))
            let replayedCount = DigestAnswer(parameters: common.replacingOccurrences(of: "nc=00000001", with: "nc=00000002")
                                             + #", algorithm=\#(algorithm.rawValue), response="\#(response)""#)
            #expect(!replayedCount.isRight(ha1: ha1, method: "GET"))
        }
        // Quoted values keep their commas and escaped quotes; unquoted ones end at a comma.
        let odd = DigestAnswer(parameters: #"uri="/a,b", username="a\"b" , nc=00000001,cnonce=xyz, Realm = "R""#)
        #expect(odd.fields == ["uri": "/a,b", "username": #"a"b"#, "nc": "00000001", "cnonce": "xyz", "realm": "R"])
        #expect(odd.algorithm == "MD5" && !odd.isRight(ha1: [UInt8](repeating: 0, count: 16), method: "GET"))
    }

    /// libmicrohttpd says "invalid" both to a wrong response and to a right one on a nonce its
    /// table lost: the first is a failure, the second a retry on a fresh nonce (stale).
    @Test func aRightAnswerOnALostNonceIsStaleAndAWrongOneFails() throws {
        let a = try authenticator()
        let lostNonce = DigestVerifier(username: "ann", method: "GET") { _, _, _ in .invalid }
        func header(password: String) -> String {
            let h = { (s: String) in Hashes.hex(Hashes.digest(.md5, s)) }
            let response = h("\(h("ann:\(realm):\(password)")):n0:00000001:c0:auth:\(h("GET:/api/session"))")
            return #"Digest username="ann", realm="Viewfinder", nonce="n0", uri="/api/session", qop=auth, nc=00000001, cnonce="c0", response="\#(response)""#
        }
        #expect(a.authenticate(.parse(authorization: header(password: "s3cret pass"), queryToken: nil), digest: lostNonce, now: 0) == .stale)
        #expect(a.authenticate(.parse(authorization: header(password: "guess"), queryToken: nil), digest: lostNonce, now: 0)
                == .failed(reason: "Digest: wrong response for 'ann'"))
        let post = DigestVerifier(username: "ann", method: "POST") { _, _, _ in .invalid }  // the answer covered GET
        #expect(a.authenticate(.parse(authorization: header(password: "s3cret pass"), queryToken: nil), digest: post, now: 0)
                == .failed(reason: "Digest: wrong response for 'ann'"))
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
