// Who exists: users (a yescrypt hash for Basic, Digest's HA1 per algorithm for the realm)
// and tokens (only a SHA-256 of the token is kept), each with a role. No token is ever kept;
// a password only for a user given ONVIF sign-in, whose PasswordDigest needs it
// (UsernameToken.swift).

public enum Role: String, Sendable, Equatable, Codable, CaseIterable {
    /// Watches: GET and HEAD of streams, snapshots, state, events, cameras, photos, the page.
    case viewer
    /// Steers: everything.
    case `operator`

    public func allows(_ needed: Role) -> Bool { self == .operator || needed == .viewer }
}

public struct UserRecord: Sendable, Equatable {
    public var name: String
    public var role: Role
    /// libcrypt's hash (`$y$…`) for Basic.
    public var passwordHash: String
    /// H(name:realm:password), hex, for Digest.
    public var digestMD5: String
    public var digestSHA256: String
    /// The password itself, for ONVIF's PasswordDigest — only for a user given ONVIF sign-in.
    public var onvifPassword: String?

    public init(name: String, role: Role, passwordHash: String, digestMD5: String, digestSHA256: String, onvifPassword: String? = nil) {
        self.name = name; self.role = role; self.passwordHash = passwordHash
        self.digestMD5 = digestMD5; self.digestSHA256 = digestSHA256; self.onvifPassword = onvifPassword
    }

    /// A new user's record: the password hashed, and kept only when `onvif`.
    public static func make(name: String, role: Role, password: String, realm: String, onvif: Bool = false) throws(AuthError) -> UserRecord {
        UserRecord(name: name, role: role, passwordHash: try Hashes.passwordHash(password),
                   digestMD5: Hashes.ha1(.md5, user: name, realm: realm, password: password),
                   digestSHA256: Hashes.ha1(.sha256, user: name, realm: realm, password: password),
                   onvifPassword: onvif ? password : nil)
    }
}

public struct TokenRecord: Sendable, Equatable {
    public var name: String
    public var role: Role
    /// SHA-256 of the token, hex.
    public var sha256: String

    public init(name: String, role: Role, sha256: String) { self.name = name; self.role = role; self.sha256 = sha256 }

    /// A new random token (printed once) and the record that keeps only its hash.
    public static func make(name: String, role: Role) throws(AuthError) -> (token: String, record: TokenRecord) {
        let token = "vf_" + (try Hashes.randomHex(24))
        return (token, TokenRecord(name: name, role: role, sha256: Hashes.sha256Hex(token)))
    }
}

/// The `auth` section of config.json.
public struct AuthSettings: Sendable, Equatable {
    public enum Mode: Sendable, Equatable {
        /// No users configured: loopback only (secure by default).
        case unconfigured
        /// `"auth": "none"` written explicitly: open to anyone who can reach the port.
        case none
        case accounts
    }
    public var mode = Mode.unconfigured
    public var realm = "Viewfinder"
    /// The Digest algorithm offered in challenges (both are accepted in answers).
    public var digestChallenge = "MD5"
    /// Who may read /metrics: viewers (default) or anyone.
    public var metricsOpen = false
    /// Failed attempts a client address may make per minute before it gets 429.
    public var failuresPerMinute = 10
    /// How long a Digest nonce stays good, in seconds; an answer on an older one is stale.
    public var nonceLifetime = 300
    public var users: [UserRecord] = []
    public var tokens: [TokenRecord] = []

    public init() {}
}
