// What the server needs to listen: address, limits, CORS and where unrouted GETs go. The
// server knows no application: how an error is answered (its body and codes), the headers
// CORS exposes and the static files are the application's to configure.

import Foundation

public struct ServerConfiguration: Sendable {
    public var host: String
    /// 0 picks a free port; `HTTPServer.port` tells which.
    public var port: Int
    /// Requests beyond this many open connections are answered 503; past seven eighths of it,
    /// so are those from an address holding more than its share (AddressLimits.swift).
    public var maxConnections: Int
    /// Larger request bodies are answered 413 without being read.
    public var maxBodyBytes: Int
    /// Origins allowed by CORS: `["*"]` for any (then never with credentials), or a list
    /// (the request's Origin is echoed when it is on it, with credentials allowed).
    public var allowOrigins: [String]
    /// Response headers a cross-origin page may read (Access-Control-Expose-Headers).
    public var exposedHeaders: [String]
    /// Files served for GET/HEAD paths no route takes.
    public var staticFiles: StaticFiles?
    /// Renders every error answer: a handler's thrown ResponseError and the server's own
    /// refusals (ServerError). The application owns its error body.
    public var renderError: @Sendable (any ResponseError) -> Response
    /// Decides each request before routing (authentication); nil lets every request through.
    public var gate: RequestGate?

    /// HTTPS with these PEM files when set; `HTTPServer.reloadCertificate()` reads them again.
    public var tls: TLSFiles?
    /// Requests from an address with this many connections stalled before a request (no head
    /// after a second, or idle between requests) are answered 503; with a few more, its new
    /// connections are closed at once. Running requests (viewers, handlers) and fresh
    /// connections do not count: AddressLimits.swift.
    public var maxConnectionsPerAddress: Int
    /// Seconds a connection may stay silent before its request headers are complete (and
    /// between requests, and during the TLS handshake). Streams and waiting handlers are exempt.
    public var headerTimeout: Int
    /// Polling threads (libmicrohttpd's thread pool): each owns its share of the connections,
    /// so a frame's parts go out on every core at once. 1 is a single polling thread.
    public var threads: Int
    /// Reverse proxies whose `Forwarded`/`X-Forwarded-For` name the client (for the gate, the
    /// lockout and logs); their connections count toward the total only, not per address.
    public var trustedProxies: TrustedProxies

    public struct TLSFiles: Sendable, Equatable {
        public var certificate: String
        public var key: String
        public init(certificate: String, key: String) {
            self.certificate = certificate
            self.key = key
        }
    }

    /// TLS 1.2 and 1.3 only (GnuTLS priority string).
    public static let tlsPriorities = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

    public init(host: String = "127.0.0.1", port: Int = 8080, maxConnections: Int = 256,
                maxBodyBytes: Int = 64 * 1024, allowOrigins: [String] = [], exposedHeaders: [String] = ["Location"],
                staticFiles: StaticFiles? = nil, renderError: @escaping @Sendable (any ResponseError) -> Response = plainErrorResponse,
                gate: RequestGate? = nil,
                tls: TLSFiles? = nil, maxConnectionsPerAddress: Int = 32, headerTimeout: Int = 10,
                threads: Int = ServerConfiguration.defaultThreads, trustedProxies: TrustedProxies = .none) {
        self.host = host
        self.port = port
        self.maxConnections = maxConnections
        self.maxBodyBytes = maxBodyBytes
        self.allowOrigins = allowOrigins
        self.exposedHeaders = exposedHeaders
        self.staticFiles = staticFiles
        self.renderError = renderError
        self.gate = gate
        self.tls = tls
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.headerTimeout = headerTimeout
        self.threads = max(1, threads)
        self.trustedProxies = trustedProxies
    }

    /// One polling thread per core.
    public static var defaultThreads: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }
}
