// Errors that say how they are answered. A handler throws; the server maps the error once, at
// dispatch: anything conforming to ResponseError is rendered by the application's renderer
// (ServerConfiguration.renderError: the application owns its error body and codes), anything
// else is a 500. The server's own refusals (no route, a body too large, a malformed head,
// too many connections) are ServerErrors, rendered the same way.

import JSON

public protocol ResponseError: Error {
    var status: Int { get }
    /// A machine-readable word for what went wrong (the application's vocabulary).
    var code: String { get }
    var message: String { get }
    /// More fields for the body, e.g. "supported": [...].
    var extra: [String: JSONValue] { get }
    /// Headers the answer needs (Allow, Retry-After, Content-Range).
    var headers: [(String, String)] { get }
}

extension ResponseError {
    public var extra: [String: JSONValue] { [:] }
    public var headers: [(String, String)] { [] }
}

/// A ResponseError spelled out: for the application's own refusals that no domain error names.
public struct HTTPError: ResponseError, Sendable, Equatable {
    public var status: Int
    public var code: String
    public var message: String
    public var extra: [String: JSONValue]
    public var headers: [(String, String)] { extraHeaders.map { ($0.name, $0.value) } }
    private var extraHeaders: [Header]

    private struct Header: Sendable, Equatable { var name: String, value: String }

    public init(_ status: Int, _ code: String, _ message: String, extra: [String: JSONValue] = [:],
                headers: [(String, String)] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra
        extraHeaders = headers.map { Header(name: $0.0, value: $0.1) }
    }
}

/// What the server refuses before (or instead of) a handler.
public enum ServerRefusal: ResponseError, Sendable, Equatable {
    case notFound(path: String)
    case methodNotAllowed(method: String, allow: [String])
    case bodyTooLarge(limit: Int)
    /// The request's head or framing is malformed (the message says how).
    case badRequest(String)
    /// Too many connections, or the server is stopping (the message says which).
    case unavailable(String)
    /// A handler failed with an error that says nothing of how to answer it.
    case internalError(String)

    public var status: Int {
        switch self {
        case .notFound: 404
        case .methodNotAllowed: 405
        case .bodyTooLarge: 413
        case .badRequest: 400
        case .unavailable: 503
        case .internalError: 500
        }
    }

    public var code: String {
        switch self {
        case .notFound: "not_found"
        case .methodNotAllowed: "method_not_allowed"
        case .bodyTooLarge: "body_too_large"
        case .badRequest: "bad_request"
        case .unavailable: "unavailable"
        case .internalError: "internal_error"
        }
    }

    public var message: String {
        switch self {
        case .notFound(let path): "No resource at \(path)."
        case .methodNotAllowed(let method, let allow): "\(method) is not allowed here; use \(allow.joined(separator: ", "))."
        case .bodyTooLarge(let limit): "Request bodies are limited to \(limit) bytes."
        case .badRequest(let m), .unavailable(let m), .internalError(let m): m
        }
    }

    public var headers: [(String, String)] {
        if case .methodNotAllowed(_, let allow) = self { return [("Allow", allow.joined(separator: ", "))] }
        return []
    }
}

/// Without an application's renderer: the status and the message as plain text.
public func plainErrorResponse(_ e: any ResponseError) -> Response {
    Response(status: e.status, contentType: "text/plain; charset=utf-8", bytes: Array("\(e.message)\n".utf8), headers: e.headers)
}
