// Digest nonces for a protocol whose server library keeps none (RTSP: gst-rtsp-server asks
// the application about every request). Stateless: a nonce is the time it was issued and a
// keyed hash of that time, so any nonce this process issued is recognized, for as long as it
// is fresh, with no table to fill or evict (the trouble DigestAnswer.swift describes).

import SystemSupport

public struct NonceIssuer: Sendable {
    private let secret: String

    public init() {
        secret = (try? Hashes.randomHex(32)) ?? String(UInt64.random(in: 0...UInt64.max), radix: 16)
    }

    /// A nonce issued at monotonic time `now`.
    public func issue(now: Double) -> String {
        let issued = String(UInt64(max(0, now * 1000)), radix: 16)
        return issued + "-" + mac(issued)
    }

    /// Seconds since `nonce` was issued, or nil when this issuer did not make it.
    public func age(_ nonce: String, now: Double) -> Double? {
        let parts = nonce.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let ms = UInt64(parts[0], radix: 16),
              Hashes.constantTimeEqual(Array(mac(String(parts[0])).utf8), Array(parts[1].utf8)) else { return nil }
        return now - Double(ms) / 1000
    }

    private func mac(_ issued: String) -> String { String(Hashes.sha256Hex("\(secret):\(issued)").prefix(32)) }
}
