// The RTSP server's gate: the same accounts, roles and failure limits as HTTP. Playing is
// viewing, so any signed-in user may (a viewer too); talking back (ONVIF's backchannel) is an
// operator's, as over WHIP. Basic and Digest (MD5, RFC 2069 form,
// as RTSP clients from live555 to ffmpeg and GStreamer answer it); Digest's nonces are this
// gate's own (NonceIssuer), since gst-rtsp-server keeps none for us.

import Auth
import Streaming
import SystemSupport

extension AccessControl {
    func rtspDecision(method: String, uri: String, authorization: String?, address: String, talk: Bool,
                      nonces: NonceIssuer) -> RTSPDecision {
        guard settings.mode == .accounts else { return .allow }
        let now = SystemSupport.Clock.monotonic()
        // RTSP has no 429: a locked-out address is refused outright until its failures age.
        if limiter.retryAfter(address, now: now) != nil { return .refuse(status: 403, challenges: []) }
        let credentials = Credentials.parse(authorization: authorization, queryToken: nil)
        var username: String?
        if case .digest(let answer) = credentials { username = answer.fields["username"] }
        let lifetime = Double(settings.nonceLifetime)
        let verifier = DigestVerifier(username: username, method: method) { _, ha1, _ in
            guard case .digest(let answer) = credentials, let nonce = answer.fields["nonce"],
                  let age = nonces.age(nonce, now: now), answer.isRight(ha1: ha1, method: method) else { return .invalid }
            return age <= lifetime ? .valid : .stale
        }
        func challenges(stale: Bool) -> RTSPDecision {
            let realm = settings.realm.replacingOccurrences(of: "\"", with: "")
            return .refuse(status: 401, challenges: [
                "Digest realm=\"\(realm)\", nonce=\"\(nonces.issue(now: now))\", algorithm=MD5" + (stale ? ", stale=TRUE" : ""),
                "Basic realm=\"\(realm)\"",
            ])
        }
        switch authenticator.authenticate(credentials, digest: verifier, now: now) {
        // Talking back is steering the camera, as WHIP's talk route is: an operator's.
        case .authenticated(let name, let role):
            guard talk, !role.allows(.operator) else { return .allow }
            logger.warning("RTSP: \(name) may watch but not talk (\(method) \(uri) requires the backchannel)")
            return .refuse(status: 403, challenges: [])
        case .missing: return challenges(stale: false)
        case .stale: return challenges(stale: true)
        case .failed(let reason):
            limiter.record(address, now: now)
            logger.warning("RTSP sign-in failed from \(address) (\(method) \(uri)): \(reason)")
            return challenges(stale: false)
        }
    }
}
