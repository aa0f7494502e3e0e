// config.json's `server` section: where HTTP listens, its limits, TLS, extra ports, its
// polling threads and the reverse proxies it trusts.

import Foundation
import HTTPServer
import JSON

extension Configuration {
    public struct Server: Sendable, Equatable {
        public var host = "127.0.0.1"
        public var port = 8080
        public var publicDirectory = "Public"
        /// CORS origins: `["*"]`, a list, or none.
        public var allowOrigins: [String] = []
        public var maxConnections = 1024
        /// HTTPS from these PEM files; SIGHUP reads them again.
        public var tls: TLS?
        public var maxConnectionsPerAddress = 32
        /// Seconds to finish the request headers (and the TLS handshake).
        public var headerTimeout = 10
        /// Extra ports, each serving one camera at `/?action=stream` (crowsnest's layout).
        public var listen: [Listener] = []
        /// Polling threads; nil: one per core.
        public var threads: Int?
        /// Reverse proxies (addresses, CIDR ranges) whose Forwarded/X-Forwarded-For name the client.
        public var trustedProxies: [String] = []
    }

    static func decodeServer(_ root: JSONObjectReader, into c: inout Configuration) throws(JSONFieldError) {
        if let s = try root.object("server") {
            c.server.host = try s.string("host") ?? c.server.host
            c.server.port = try s.int("port", in: 0...65535) ?? c.server.port
            c.server.publicDirectory = try s.string("publicDirectory") ?? c.server.publicDirectory
            c.server.allowOrigins = try origins(s.value("allowOrigin"))
            c.server.maxConnections = try s.int("maxConnections", in: 1...100_000) ?? c.server.maxConnections
            if let t = try s.object("tls") {
                guard let certificate = try t.string("certificate"), !certificate.isEmpty else {
                    throw JSONFieldError(path: "server.tls.certificate", problem: "required (a PEM file)")
                }
                guard let key = try t.string("key"), !key.isEmpty else {
                    throw JSONFieldError(path: "server.tls.key", problem: "required (a PEM file)")
                }
                try t.finish()
                c.server.tls = TLS(certificate: certificate, key: key)
            }
            c.server.maxConnectionsPerAddress = try s.int("maxConnectionsPerAddress", in: 1...100_000) ?? c.server.maxConnectionsPerAddress
            c.server.headerTimeout = try s.int("headerTimeout", in: 1...3600) ?? c.server.headerTimeout
            c.server.threads = try s.int("threads", in: 1...64) ?? c.server.threads
            if let v = s.value("trustedProxies") {
                guard case .array(let items) = v else { throw JSONFieldError(path: "server.trustedProxies", problem: "expected a list of addresses or CIDR ranges") }
                var entries: [String] = []
                for (i, item) in items.enumerated() {
                    guard case .string(let e) = item else { throw JSONFieldError(path: "server.trustedProxies[\(i)]", problem: "expected an address or a CIDR range such as \"10.0.0.0/8\"") }
                    do throws(TrustedProxies.Problem) { _ = try TrustedProxies([e]) } catch {
                        throw JSONFieldError(path: "server.trustedProxies[\(i)]", problem: error.description)
                    }
                    entries.append(e)
                }
                c.server.trustedProxies = entries
            }
            if let l = s.value("listen") {
                guard case .array(let items) = l else { throw JSONFieldError(path: "server.listen", problem: "expected a list of {\"port\", \"camera\"}") }
                for (i, item) in items.enumerated() {
                    let r = try JSONObjectReader(item, path: "server.listen[\(i)]")
                    guard let port = try r.int("port", in: 0...65535) else { throw JSONFieldError(path: "server.listen[\(i)].port", problem: "required") }
                    guard let camera = try r.string("camera"), !camera.isEmpty else {
                        throw JSONFieldError(path: "server.listen[\(i)].camera", problem: "required (a camera id)")
                    }
                    let host = try r.string("host")
                    try r.finish()
                    c.server.listen.append(Listener(port: port, camera: camera, host: host))
                }
            }
            try s.finish()
        }
    }

    static func origins(_ v: JSONValue?) throws(JSONFieldError) -> [String] {
        switch v {
        case nil, .null?: return []
        case .string(let s)?: return [s]
        case .array(let items)?:
            var out: [String] = []
            for (i, item) in items.enumerated() {
                guard case .string(let s) = item, !s.isEmpty else {
                    throw JSONFieldError(path: "server.allowOrigin[\(i)]", problem: "expected an origin such as \"https://octopi.local\"")
                }
                out.append(s)
            }
            return out
        default:
            throw JSONFieldError(path: "server.allowOrigin", problem: "expected an origin, a list of origins, or null")
        }
    }
}
