// What the server needs to listen: address, limits, CORS and the static directory.

public struct ServerConfiguration: Sendable {
    public var host: String
    /// 0 picks a free port; `HTTPServer.port` tells which.
    public var port: Int
    /// Requests beyond this many open connections are answered 503.
    public var maxConnections: Int
    /// Larger request bodies are answered 413 without being read.
    public var maxBodyBytes: Int
    /// When set, CORS headers allow this origin ("*" for any).
    public var allowOrigin: String?
    public var publicDirectory: String?

    public init(host: String = "127.0.0.1", port: Int = 8080, maxConnections: Int = 256,
                maxBodyBytes: Int = 64 * 1024, allowOrigin: String? = nil, publicDirectory: String? = nil) {
        self.host = host
        self.port = port
        self.maxConnections = maxConnections
        self.maxBodyBytes = maxBodyBytes
        self.allowOrigin = allowOrigin
        self.publicDirectory = publicDirectory
    }
}
