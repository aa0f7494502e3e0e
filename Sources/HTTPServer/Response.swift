// What a handler answers: a status, headers, and a body that is bytes, a file or a stream.

public struct Response: Sendable {
    public enum Body: Sendable {
        case bytes([UInt8])
        /// An endless or long body produced as it goes (multipart MJPEG, SSE).
        case stream(any StreamBody)
        /// Part or all of an open file (movies: large, and asked for by range).
        case file(FileBody)
    }

    public var status: Int
    public var headers: [(String, String)]
    public var body: Body
    /// A 401's challenges; the server adds `WWW-Authenticate` (Digest's nonce is libmicrohttpd's).
    public var challenge: AuthChallenge?

    public init(status: Int = 200, headers: [(String, String)] = [], body: Body = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: Int = 200, contentType: String, bytes: [UInt8], headers: [(String, String)] = []) {
        self.init(status: status, headers: [("Content-Type", contentType)] + headers, body: .bytes(bytes))
    }

    public static func text(_ s: String, status: Int = 200) -> Response {
        Response(status: status, contentType: "text/plain; charset=utf-8", bytes: Array(s.utf8))
    }

    /// Headers that stop browsers and proxies from caching live images.
    public static let noCache: [(String, String)] = [
        ("Cache-Control", "no-store, no-cache, must-revalidate, proxy-revalidate, max-age=0"),
        ("Pragma", "no-cache"),
        ("Expires", "Mon, 3 Jan 2000 12:34:56 GMT"),
    ]

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

/// The next piece of a streamed body.
public enum StreamChunk: Sendable {
    case data([UInt8])
    /// Nothing to send yet: the server parks the connection until the waker is called.
    case wait
    case end
}

/// A body produced piece by piece on the server's thread. `next()` must not block: it
/// answers `.wait` and later calls the waker given to `attach` when there may be more.
public protocol StreamBody: AnyObject, Sendable {
    func attach(waker: @escaping @Sendable () -> Void)
    func next() -> StreamChunk
    /// The connection is gone (client closed, or server stopping). Called once.
    func close()
}
