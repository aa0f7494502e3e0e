// Who is asking: the credentials of a request (Basic, Digest, Bearer, or a token in the
// query for <img> clients that cannot send headers) checked against the accounts. Digest
// is checked by libmicrohttpd through a closure the server provides; everything else here.
// A successful Basic check is remembered for a few minutes by a SHA-256 of the header, so
// a client's next requests do not pay yescrypt again.

import Foundation
import SystemSupport

public enum Credentials: Sendable, Equatable {
    case none
    case basic(user: String, password: String)
    case bearer(String)
    case queryToken(String)
    case digest(DigestAnswer)
    /// An Authorization header that is none of the above or does not parse.
    case malformed

    public static func parse(authorization: String?, queryToken: String?) -> Credentials {
        if let header = authorization?.trimmingCharacters(in: .whitespaces), !header.isEmpty {
            let parts = header.split(separator: " ", maxSplits: 1).map(String.init)
            let scheme = parts[0].lowercased(), rest = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
            switch scheme {
            case "basic":
                guard let data = Base64.decode(rest), let text = String(validating: data, as: UTF8.self),
                      let colon = text.firstIndex(of: ":") else { return .malformed }
                return .basic(user: String(text[..<colon]), password: String(text[text.index(after: colon)...]))
            case "bearer":
                return rest.isEmpty ? .malformed : .bearer(rest)
            case "digest":
                return .digest(DigestAnswer(parameters: rest))
            default:
                return .malformed
            }
        }
        if let queryToken, !queryToken.isEmpty { return .queryToken(queryToken) }
        return .none
    }
}

public enum AuthOutcome: Sendable, Equatable {
    case authenticated(name: String, role: Role)
    /// No credentials: answer with a challenge.
    case missing
    /// Wrong credentials: a failure that counts against the client address.
    case failed(reason: String)
    /// Right Digest on an expired nonce: challenge again with stale=true (not a failure).
    case stale
}

/// libmicrohttpd's Digest check for the request at hand: (username, HA1 bytes, algorithm).
public struct DigestVerifier {
    public var username: String?
    /// The request's method, which a Digest response covers.
    public var method: String
    public var check: (_ username: String, _ ha1: [UInt8], _ sha256: Bool) -> DigestResult
    public init(username: String?, method: String, check: @escaping (String, [UInt8], Bool) -> DigestResult) {
        self.username = username; self.method = method; self.check = check
    }
}

public enum DigestResult: Sendable { case valid, invalid, stale }

public final class Authenticator: Sendable {
    public let settings: AuthSettings
    private let basicCache = Locked([String: (name: String, role: Role, until: Double)]())
    static let cacheSeconds = 300.0

    public init(_ settings: AuthSettings) {
        self.settings = settings
        _ = Self.decoyHash  // made at start-up, not during the first failed sign-in
    }

    public func authenticate(_ credentials: Credentials, digest: DigestVerifier, now: Double) -> AuthOutcome {
        switch credentials {
        case .none:
            return .missing
        case .malformed:
            return .failed(reason: "a malformed Authorization header")
        case .basic(let user, let password):
            let key = Hashes.sha256Hex("\(user)\u{0}\(password)")
            if let hit = basicCache.withLock({ c -> (name: String, role: Role, until: Double)? in
                guard let e = c[key], e.until > now else { c[key] = nil; return nil }
                return e
            }) { return .authenticated(name: hit.name, role: hit.role) }
            guard let u = settings.users.first(where: { $0.name == user }) else {
                _ = Hashes.verify(password, against: Self.decoyHash)  // the same time for an unknown user
                return .failed(reason: "Basic: no user '\(user)'")
            }
            guard Hashes.verify(password, against: u.passwordHash) else { return .failed(reason: "Basic: wrong password for '\(user)'") }
            basicCache.withLock { c in
                if c.count > 1024 { c = c.filter { $0.value.until > now } }
                c[key] = (u.name, u.role, now + Self.cacheSeconds)
            }
            return .authenticated(name: u.name, role: u.role)
        case .bearer(let token), .queryToken(let token):
            let hash = Array(Hashes.sha256Hex(token).utf8)
            guard let t = settings.tokens.first(where: { Hashes.constantTimeEqual(Array($0.sha256.utf8), hash) }) else {
                return .failed(reason: "an unknown token")
            }
            return .authenticated(name: t.name, role: t.role)
        case .digest(let answer):
            let algorithm = answer.algorithm
            guard algorithm == "MD5" || algorithm == "SHA-256" else { return .failed(reason: "Digest algorithm \(algorithm)") }
            guard let name = digest.username else { return .failed(reason: "Digest without a username") }
            guard let u = settings.users.first(where: { $0.name == name }),
                  let ha1 = Hashes.bytes(hex: algorithm == "MD5" ? u.digestMD5 : u.digestSHA256) else {
                return .failed(reason: "Digest: no user '\(name)'")
            }
            switch digest.check(name, ha1, algorithm == "SHA-256") {
            case .valid: return .authenticated(name: u.name, role: u.role)
            case .stale: return .stale
            case .invalid:
                // libmicrohttpd also says "invalid" to a right response on a nonce its table
                // lost (DigestAnswer says why): that one retries on a fresh nonce.
                if answer.isRight(ha1: ha1, method: digest.method) { return .stale }
                return .failed(reason: "Digest: wrong response for '\(name)'")
            }
        }
    }

    /// A hash of nothing anyone knows, verified for unknown users so that timing does not
    /// tell which names exist.
    static let decoyHash: String = (try? Hashes.passwordHash("decoy-\(UInt64.random(in: 0...UInt64.max))")) ?? "*"
}

/// Failed attempts per client address over the last minute; past the limit the address
/// gets 429 until its oldest failure is a minute old. Per address only: a locked-out
/// address does not lock the user out elsewhere.
public final class FailureLimiter: Sendable {
    private let perMinute: Int
    private let failures = Locked([String: [Double]]())

    public init(perMinute: Int) { self.perMinute = perMinute }

    /// Seconds to wait when `address` is locked out, else nil.
    public func retryAfter(_ address: String, now: Double) -> Double? {
        failures.withLock { f -> Double? in
            let recent = (f[address] ?? []).filter { now - $0 < 60 }
            f[address] = recent.isEmpty ? nil : recent
            guard recent.count >= perMinute, let oldest = recent.first else { return nil }
            return max(1, 60 - (now - oldest))
        }
    }

    public func record(_ address: String, now: Double) {
        failures.withLock { f in
            if f.count > 10_000 { f = f.filter { $0.value.contains { now - $0 < 60 } } }
            f[address, default: []].append(now)
        }
    }
}
