// Errors that know their HTTP status and the contract's error code, answered as
// {"error": {"code", "message", ...extra}} in one place.

import Foundation
import JSON

public struct HTTPError: Error, Sendable, Equatable {
    public var status: Int
    public var code: String
    public var message: String
    /// Extra JSON fields, e.g. "supported": [...], already encoded as JSON values.
    public var extra: [String: JSONValue]

    public init(_ status: Int, _ code: String, _ message: String, extra: [String: JSONValue] = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra
    }

    public var response: Response {
        var fields = extra
        fields["code"] = .string(code)
        fields["message"] = .string(message)
        let body = JSONValue.object(["error": .object(fields)]).encoded()
        var headers: [(String, String)] = [("Content-Type", "application/json")]
        if status == 503 || status == 413 { headers.append(("Connection", "close")) }
        return Response(status: status, headers: headers, body: .bytes(body))
    }

    public static func notFound(_ path: String) -> HTTPError {
        HTTPError(404, "not_found", "No resource at \(path).")
    }

    public static func methodNotAllowed(_ method: String, allow: [String]) -> HTTPError {
        HTTPError(405, "method_not_allowed",
                  "\(method) is not allowed here; use \(allow.joined(separator: ", ")).")
    }

    public static func bodyTooLarge(limit: Int) -> HTTPError {
        HTTPError(413, "body_too_large", "Request bodies are limited to \(limit) bytes.")
    }
}
