// Who may do what, decided before routing. viewer: GET and HEAD (streams, snapshots,
// state, events, cameras, photos, the page); operator: everything; /healthz always open;
// ONVIF's POSTs to /onvif/* passed on (their sign-in is in the message: ONVIFService.swift);
// /metrics open to viewers (or to anyone, `auth.metrics: "open"`). Without accounts —
// loopback, or `"auth": "none"` — everyone is an operator, as before.

import Auth
import CameraCore
import Foundation
import HTTPServer
import Logging
import SystemSupport

final class AccessControl: Sendable {
    let settings: AuthSettings
    let authenticator: Authenticator
    let limiter: FailureLimiter
    let logger: Logger

    init(_ settings: AuthSettings, logger: Logger) {
        self.settings = settings
        authenticator = Authenticator(settings)
        limiter = FailureLimiter(perMinute: settings.failuresPerMinute)
        self.logger = logger
    }

    /// The role a request needs, or nil when it is open to anyone.
    func required(_ r: Request) -> Role? {
        if r.path == "/healthz" { return nil }
        if r.path == "/metrics" && settings.metricsOpen { return nil }
        // ONVIF signs in inside the SOAP message (WS-Security), which the service reads itself,
        // or with HTTP Digest: credentials sent are checked here (any user), and the service
        // decides what the role allows; none sent, the service asks (ONVIFService.swift).
        if r.method == "POST" && r.path.hasPrefix("/onvif/") { return r.headers["authorization"] == nil ? nil : .viewer }
        // Opening and ending a WebRTC view is watching, not steering.
        // (A PATCH trickles the viewer's own ICE candidates to its session.)
        if (r.method == "POST" && r.path.hasSuffix("/whep")) || ((r.method == "DELETE" || r.method == "PATCH") && r.path.hasPrefix("/api/whep/")) { return .viewer }
        // What was said to a camera is the talker's: hearing it back needs an operator, as talking does.
        if r.path.hasSuffix("/speaker.wav") { return .operator }
        return r.method == "GET" || r.method == "HEAD" ? .viewer : .operator
    }

    func gate(_ request: inout Request, _ digest: DigestAuthorization) -> Response? {
        guard settings.mode == .accounts else {
            request.principal = Principal(name: "", role: Role.operator.rawValue)
            return nil
        }
        guard let needed = required(request) else { return nil }
        let now = SystemSupport.Clock.monotonic()
        let address = request.remoteAddress
        if let wait = limiter.retryAfter(address, now: now) {
            let seconds = Int(wait.rounded(.up))
            return errorBody(SignInRefusal.tooManyFailures(address: address, seconds: seconds))
        }
        let realm = settings.realm
        let lifetime = UInt32(settings.nonceLifetime)
        let verifier = DigestVerifier(username: digest.username, method: request.method) { user, ha1, sha256 in
            switch digest.check(realm: realm, username: user, ha1: ha1, algorithm: sha256 ? .sha256 : .md5, nonceLifetime: lifetime) {
            case .valid: .valid
            case .stale: .stale
            case .invalid: .invalid
            }
        }
        let credentials = Credentials.parse(authorization: request.headers["authorization"], queryToken: request.query["token"])
        switch authenticator.authenticate(credentials, digest: verifier, now: now) {
        case .authenticated(let name, let role):
            guard role.allows(needed) else {
                return errorBody(SignInRefusal.forbidden("'\(name)' is a \(role.rawValue); \(request.method) \(request.path) needs an operator."))
            }
            request.principal = Principal(name: name, role: role.rawValue)
            request.query["token"] = nil  // never passed on
            return nil
        case .missing:
            return challenge(stale: false, "Sign in: this camera needs a user (Basic or Digest) or a token.")
        case .stale:
            return challenge(stale: true, "The sign-in nonce expired; retry with the new one.")
        case .failed(let reason):
            limiter.record(address, now: now)
            logger.warning("sign-in failed from \(address): \(reason)")  // never the password or token
            return challenge(stale: false, "Those credentials are not valid here.")
        }
    }

    private func challenge(stale: Bool, _ message: String) -> Response {
        var r = errorBody(SignInRefusal.unauthorized(message))
        r.challenge = challenge(stale: stale)
        return r
    }

    /// The 401's WWW-Authenticate: Basic, and Digest in the configured algorithm.
    func challenge(stale: Bool) -> AuthChallenge {
        AuthChallenge(realm: settings.realm, basic: true, digest: settings.digestChallenge == "SHA-256" ? .sha256 : .md5, stale: stale)
    }
}

/// Why the gate refused a request, as the contract answers it.
enum SignInRefusal: ResponseError {
    case tooManyFailures(address: String, seconds: Int)
    /// Signed in, but the role does not allow the call.
    case forbidden(String)
    /// No credentials, wrong ones, or a stale nonce (the 401 carries the challenge).
    case unauthorized(String)

    var status: Int {
        switch self {
        case .tooManyFailures: 429
        case .forbidden: 403
        case .unauthorized: 401
        }
    }

    var code: String {
        switch self {
        case .tooManyFailures: "too_many_requests"
        case .forbidden: "forbidden"
        case .unauthorized: "unauthorized"
        }
    }

    var message: String {
        switch self {
        case .tooManyFailures(let address, let seconds): "Too many failed sign-ins from \(address); try again in \(seconds) s."
        case .forbidden(let m), .unauthorized(let m): m
        }
    }

    var headers: [(String, String)] {
        if case .tooManyFailures(_, let seconds) = self { return [("Retry-After", String(seconds))] }
        return []
    }
}
