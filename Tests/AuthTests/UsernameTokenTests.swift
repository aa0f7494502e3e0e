// WS-Security's UsernameToken as ONVIF clients send it: a PasswordDigest checked against the
// password kept for a user given ONVIF sign-in, the digest's freshness and its nonce's single
// use; PasswordText against the password's hash. The digest below was computed outside this
// code (Python's hashlib: Base64(SHA-1(nonce ‖ created ‖ password))).

import Auth
import Testing

@Suite struct UsernameTokenTests {
    static let created = "2026-11-29T05:40:01+00:00"
    static let createdAt = 1_795_930_801.0
    static let nonce = "MDEyMzQ1Njc4OWFiY2RlZg=="  // "0123456789abcdef"
    static let digest = "tP5CgiOwX2I+SEGrJRcPnwYjZ+A="  // of password "secret pw"

    func authenticator(onvif: Bool = true) throws -> Authenticator {
        var s = AuthSettings()
        s.mode = .accounts
        s.users = [try UserRecord.make(name: "ha", role: .viewer, password: "secret pw", realm: "Viewfinder", onvif: onvif)]
        return Authenticator(s)
    }

    func token(_ digest: String = digest, nonce: String? = nonce, created: String? = created, user: String = "ha") -> UsernameToken {
        UsernameToken(username: user, password: digest, isDigest: true, nonce: nonce, created: created)
    }

    @Test func aRightDigestSignsIn() throws {
        let a = try authenticator()
        #expect(a.authenticate(token(), now: Self.createdAt + 3, nonces: NonceMemory()) == .authenticated(name: "ha", role: .viewer))
    }

    @Test func zuluTimeIsTheSameInstant() throws {
        // onvif-zeep-async 4.3 writes "Z" where 4.0 wrote "+00:00"; the digest covers the text.
        let created = "2026-11-29T05:40:01Z"
        let digest = "kGkT52QFM0fB4f9jNU7V9SHBDqo="
        let a = try authenticator()
        #expect(a.authenticate(token(digest, created: created), now: Self.createdAt, nonces: NonceMemory()) == .authenticated(name: "ha", role: .viewer))
    }

    @Test func aNonceIsTakenOnce() throws {
        let a = try authenticator(), nonces = NonceMemory()
        #expect(a.authenticate(token(), now: Self.createdAt, nonces: nonces) == .authenticated(name: "ha", role: .viewer))
        guard case .failed(let why) = a.authenticate(token(), now: Self.createdAt + 1, nonces: nonces) else {
            Issue.record("a replayed nonce was accepted"); return
        }
        #expect(why.contains("nonce already used"))
    }

    @Test func aStaleOrFutureTokenIsRefused() throws {
        let a = try authenticator()
        for skew in [-301.0, 301.0] {
            guard case .failed(let why) = a.authenticate(token(), now: Self.createdAt + skew, nonces: NonceMemory()) else {
                Issue.record("a token \(skew) s off was accepted"); continue
            }
            #expect(why.contains("from this server's clock"))
        }
        #expect(a.authenticate(token(), now: Self.createdAt - 299, nonces: NonceMemory()) == .authenticated(name: "ha", role: .viewer))
    }

    @Test func wrongDigestUnknownUserAndMissingPartsAreRefused() throws {
        let a = try authenticator()
        let cases: [(UsernameToken, String)] = [
            (token("AAAAAAAAAAAAAAAAAAAAAAAAAAA="), "wrong password digest"),
            (token(user: "nobody"), "no user 'nobody'"),
            (token(nonce: nil), "without a Base64 nonce"),
            (token(nonce: "***"), "without a Base64 nonce"),
            (token(created: nil), "Created time"),
            (token(created: "yesterday"), "Created time"),
        ]
        for (t, reason) in cases {
            guard case .failed(let why) = a.authenticate(t, now: Self.createdAt, nonces: NonceMemory()) else {
                Issue.record("accepted: \(t)"); continue
            }
            #expect(why.contains(reason), "\(why)")
        }
    }

    @Test func aDigestNeedsAUserGivenONVIFSignIn() throws {
        let a = try authenticator(onvif: false)
        guard case .failed(let why) = a.authenticate(token(), now: Self.createdAt, nonces: NonceMemory()) else {
            Issue.record("a digest was accepted for a user without ONVIF sign-in"); return
        }
        #expect(why.contains("--onvif"))
    }

    @Test func passwordTextIsCheckedAgainstTheHash() throws {
        let a = try authenticator(onvif: false)
        let right = UsernameToken(username: "ha", password: "secret pw", isDigest: false, nonce: nil, created: nil)
        #expect(a.authenticate(right, now: 0, nonces: NonceMemory()) == .authenticated(name: "ha", role: .viewer))
        var wrong = right
        wrong.password = "guess"
        #expect(a.authenticate(wrong, now: 0, nonces: NonceMemory()) != .authenticated(name: "ha", role: .viewer))
    }
}
