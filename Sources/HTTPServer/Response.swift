// What a handler answers: a status, headers, and a body that is bytes, a file or a stream.

import Subscriptions

public struct Response: Sendable {
    public enum Body: Sendable {
        case bytes([UInt8])
        /// An endless or long body produced as it goes (multipart MJPEG, fMP4, SSE): a
        /// subscription the connection pumps, each item sent as it is.
        case stream(any Subscription<[UInt8]>)
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
