// Routes by method and path; `:name` segments capture parameters. Knows nothing of sockets,
// so it is tested without one.

/// A route's handler: answers, or throws (a ResponseError is rendered; anything else is a 500).
public typealias Handler = @Sendable (Request) async throws -> Response

public struct Router: Sendable {
    private struct Route: Sendable {
        let method: String
        let segments: [Substring]
        let handler: Handler
    }

    public enum Match {
        case found(Handler, parameters: [String: String])
        /// The path exists under other methods (405 with Allow).
        case methodNotAllowed(allow: [String])
        case notFound
    }

    private var routes: [Route] = []

    public init() {}

    public mutating func add(_ method: String, _ path: String, _ handler: @escaping Handler) {
        routes.append(Route(method: method, segments: Self.split(path), handler: handler))
    }

    public mutating func get(_ path: String, _ h: @escaping Handler) { add("GET", path, h) }
    public mutating func post(_ path: String, _ h: @escaping Handler) { add("POST", path, h) }
    public mutating func delete(_ path: String, _ h: @escaping Handler) { add("DELETE", path, h) }
    public mutating func patch(_ path: String, _ h: @escaping Handler) { add("PATCH", path, h) }

    /// Every route as (method, path) with `:name` segments written `{name}`, as OpenAPI does.
    public var routeList: [(method: String, path: String)] {
        routes.map { r in
            (r.method, "/" + r.segments.map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/"))
        }
    }

    /// HEAD is answered by the GET route; OPTIONS by the server from `allowedMethods`.
    /// `path` is the raw (percent-encoded) path: it is split first and each segment decoded
    /// after, so an encoded slash stays inside its segment (`..%2F` is one odd id, not two
    /// segments). A segment that does not decode matches only a parameter, never a literal.
    public func match(method: String, path: String) -> Match {
        let parts = Self.segments(path)
        var allowed: [String] = []
        var hit: (Handler, [String: String])?
        for route in routes {
            guard let params = Self.bind(route.segments, parts) else { continue }
            allowed.append(route.method)
            if hit == nil && (route.method == method || (method == "HEAD" && route.method == "GET")) {
                hit = (route.handler, params)
            }
        }
        if let hit { return .found(hit.0, parameters: hit.1) }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allow: Self.withImplied(allowed))
    }

    /// Methods a path answers to, with HEAD and OPTIONS implied by GET; empty if none.
    public func allowedMethods(path: String) -> [String] {
        let parts = Self.segments(path)
        return Self.withImplied(routes.filter { Self.bind($0.segments, parts) != nil }.map(\.method))
    }

    private static func withImplied(_ methods: [String]) -> [String] {
        var out: [String] = []
        for m in methods where !out.contains(m) { out.append(m) }
        if out.contains("GET") && !out.contains("HEAD") { out.append("HEAD") }
        if !out.isEmpty && !out.contains("OPTIONS") { out.append("OPTIONS") }
        return out
    }

    /// On the scalar "/", not on graphemes: a scalar that clusters with it ("x\u{600}/y",
    /// a prepended one) would otherwise hide a separator.
    private static func split(_ path: String) -> [Substring] {
        path.unicodeScalars.split(separator: "/", omittingEmptySubsequences: true).map { Substring($0) }
    }

    private static func segments(_ rawPath: String) -> [Substring] {
        split(rawPath).map { Substring(StaticFiles.percentDecode(String($0)) ?? "\u{0}" + $0) }
    }

    private static func bind(_ pattern: [Substring], _ parts: [Substring]) -> [String: String]? {
        guard pattern.count == parts.count else { return nil }
        var params: [String: String] = [:]
        for (p, v) in zip(pattern, parts) {
            if p.hasPrefix(":") { params[String(p.dropFirst())] = String(v) }
            else if !p.utf8.elementsEqual(v.utf8) { return nil }  // bytes, not canonical equivalence
        }
        return params
    }
}
