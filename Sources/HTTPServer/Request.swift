// An HTTP request as handlers see it: decoded path, query, lower-cased headers, body.

public struct Request: Sendable {
    public var method: String
    /// The decoded path, without the query.
    public var path: String
    /// Query parameters; a bare key (`?1700000000000`) maps to "".
    public var query: [String: String]
    /// Header names lower-cased.
    public var headers: [String: String]
    public var body: [UInt8]
    /// Values captured by `:name` segments of the matched route.
    public var parameters: [String: String] = [:]
    /// The client's address (IPv4 or IPv6 text), empty when unknown.
    public var remoteAddress = ""
    /// Who the gate let in, if anyone: a name and a role, as the application knows them.
    public var principal: Principal?

    public init(method: String, path: String, query: [String: String] = [:],
                headers: [String: String] = [:], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The Content-Type's media type without its parameters, lower-cased (RFC 9110, section
    /// 8.3.1: `Application/SDP; charset=utf-8` is `application/sdp`); nil without one.
    public var mediaType: String? {
        header("content-type")?.split(separator: ";", omittingEmptySubsequences: false).first?
            .trimmingCharacters(in: .whitespaces).lowercased()
    }
}

/// An authenticated client, as the application's gate names it.
public struct Principal: Sendable, Equatable {
    public var name: String
    public var role: String
    public init(name: String, role: String) { self.name = name; self.role = role }
}
