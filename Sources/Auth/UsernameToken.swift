// WS-Security's UsernameToken (OASIS UsernameToken Profile 1.1), the sign-in ONVIF clients
// send inside the SOAP header of every request: a name, and either the password (PasswordText)
// or Base64(SHA-1(nonce ‖ created ‖ password)) (PasswordDigest) with the nonce and the time it
// was made. A digest can only be checked against the password itself, which Viewfinder keeps
// only for users given ONVIF sign-in (`onvifPassword`); PasswordText is checked against the
// password hash as Basic is. A digest's time must be within `skew` of ours (the profile's
// "freshness"), and its nonce is remembered for that long and refused a second time.

import Foundation
import SystemSupport

public struct UsernameToken: Sendable, Equatable {
    public var username: String
    public var password: String
    /// PasswordDigest (else PasswordText).
    public var isDigest: Bool
    /// The nonce as sent (Base64).
    public var nonce: String?
    /// `wsu:Created` as sent (the digest covers its exact text).
    public var created: String?

    public init(username: String, password: String, isDigest: Bool, nonce: String?, created: String?) {
        self.username = username; self.password = password; self.isDigest = isDigest
        self.nonce = nonce; self.created = created
    }
}

/// Nonces of accepted digests, each until its token's time is out of the window.
public final class NonceMemory: Sendable {
    private let seen = Locked([String: Double]())
    private let limit: Int

    public init(limit: Int = 100_000) { self.limit = limit }

    /// True the first time `nonce` is offered within `until`; false for a replay.
    func accept(_ nonce: String, until: Double, now: Double) -> Bool {
        seen.withLock { s in
            if s.count >= limit { s = s.filter { $0.value > now } }
            if let t = s[nonce], t > now { return false }
            s[nonce] = until
            return true
        }
    }
}

extension Authenticator {
    /// How far a token's `Created` may be from our clock, either way (seconds).
    public static let usernameTokenSkew = 300.0

    /// Checks `token` at wall-clock time `now` (seconds since 1970).
    public func authenticate(_ token: UsernameToken, now: Double, nonces: NonceMemory) -> AuthOutcome {
        let name = token.username
        guard let u = settings.users.first(where: { $0.name == name }) else {
            if !token.isDigest { _ = Hashes.verify(token.password, against: Self.decoyHash) }
            return .failed(reason: "UsernameToken: no user '\(name)'")
        }
        guard token.isDigest else {
            guard Hashes.verify(token.password, against: u.passwordHash) else { return .failed(reason: "UsernameToken: wrong password for '\(name)'") }
            return .authenticated(name: u.name, role: u.role)
        }
        guard let secret = u.onvifPassword else {
            return .failed(reason: "UsernameToken: '\(name)' has no ONVIF sign-in (viewfinder user add \(name) --onvif)")
        }
        guard let nonceText = token.nonce, let nonce = Data(base64Encoded: nonceText), !nonce.isEmpty,
              let created = token.created, let when = Self.time(created) else {
            return .failed(reason: "UsernameToken: a PasswordDigest without a Base64 nonce and a Created time")
        }
        guard abs(when - now) <= Self.usernameTokenSkew else {
            return .failed(reason: "UsernameToken: Created \(created) is more than \(Int(Self.usernameTokenSkew)) s from this server's clock")
        }
        let expected = Hashes.sha1([UInt8](nonce) + Array(created.utf8) + Array(secret.utf8))
        guard let given = Data(base64Encoded: token.password), Hashes.constantTimeEqual([UInt8](given), expected) else {
            return .failed(reason: "UsernameToken: wrong password digest for '\(name)'")
        }
        guard nonces.accept(nonceText, until: max(when, now) + Self.usernameTokenSkew, now: now) else {
            return .failed(reason: "UsernameToken: a nonce already used")
        }
        return .authenticated(name: u.name, role: u.role)
    }

    /// An xs:dateTime in UTC — `2026-11-29T05:40:01Z`, `…+00:00`, with or without fractions —
    /// as seconds since 1970; nil for anything else.
    static func time(_ s: String) -> Double? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = f.date(from: s) { return d.timeIntervalSince1970 }
        f.formatOptions = [.withInternetDateTime]
        return f.date(from: s)?.timeIntervalSince1970
    }
}
