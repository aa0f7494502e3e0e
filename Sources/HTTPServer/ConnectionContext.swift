// Per-request state that libmicrohttpd keeps for us in `*con_cls` across the several calls
// of the access handler (first call, upload chunks, final call, and the call after resume).

import CMicroHTTPD
import Foundation

final class ConnectionContext: @unchecked Sendable {  // one connection's: libmicrohttpd calls back for it on one polling thread at a time
    let connection: OpaquePointer
    let method: String
    let rawURL: String
    /// "HTTP/1.1", "HTTP/1.0" (libmicrohttpd refuses others before the first call).
    let version: String
    var headers: [String: String] = [:]
    /// Every Content-Length header's value, in order (`headers` keeps only the last).
    var contentLengths: [String] = []
    var hosts = 0
    /// The first header field that breaks RFC 9110's syntax (HeaderSyntax), said for a 400.
    var malformedField: String?
    var query: [String: String] = [:]
    var body: [UInt8] = []
    /// Over the body limit: further upload is read and dropped, then 413 is answered.
    var tooLarge = false
    var discarded = 0
    /// Set once a response has been queued: later calls have nothing to do.
    var answered = false
    var dispatched = false

    // Guarded by the server's lock: the handler task completes on another thread.
    var pendingResponse: Response?
    /// Whose forwarding headers name the client (`Request.remoteAddress`).
    var trustedProxies = TrustedProxies.none
    var suspended = false

    init(connection: OpaquePointer, method: String, rawURL: String, version: String) {
        self.connection = connection
        self.method = method
        self.rawURL = rawURL
        self.version = version
    }

    /// Reads request headers and the (MHD-decoded) query arguments.
    func collectValues() {
        let box = Unmanaged.passUnretained(self).toOpaque()
        // With their sizes: a NUL inside a name or value is seen, not cut at.
        MHD_get_connection_values_n(connection, .HEADER_KIND, { cls, _, key, keySize, value, valueSize in
            let ctx = Unmanaged<ConnectionContext>.fromOpaque(cls!).takeUnretainedValue()
            guard let key else { return MHD_Result.YES }
            let nameBytes = UnsafeRawBufferPointer(start: key, count: keySize)
            let valueBytes = UnsafeRawBufferPointer(start: value, count: value == nil ? 0 : valueSize)
            if ctx.malformedField == nil { ctx.malformedField = HeaderSyntax.problem(name: nameBytes, value: valueBytes) }
            let name = String(decoding: nameBytes, as: UTF8.self).lowercased(), v = String(decoding: valueBytes, as: UTF8.self)
            ctx.headers[name] = v
            if name == "content-length" { ctx.contentLengths.append(v) }
            if name == "host" { ctx.hosts += 1 }
            return MHD_Result.YES
        }, box)
        // Arguments arrive raw (see cmhd_no_unescape); a value that does not decode is dropped,
        // as unknown parameters are ignored anyway.
        MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, { cls, _, key, value in
            let ctx = Unmanaged<ConnectionContext>.fromOpaque(cls!).takeUnretainedValue()
            if let key, let k = StaticFiles.percentDecode(String(cString: key), plusIsSpace: true),
               let v = StaticFiles.percentDecode(value.map { String(cString: $0) } ?? "", plusIsSpace: true) {
                ctx.query[k] = v
            }
            return MHD_Result.YES
        }, box)
    }

    /// Several Content-Length headers that disagree: the body's length is unknowable, and
    /// libmicrohttpd would frame the body by the first one while a proxy may use another
    /// (request smuggling). RFC 9112 6.3: answer 400 and close. Equal repeats are allowed.
    var conflictingContentLengths: Bool {
        Set(contentLengths.map { $0.trimmingCharacters(in: .whitespaces) }).count > 1
    }

    /// Why the head is malformed (a field's syntax, Host missing or repeated), or nil.
    var malformedHead: String? { malformedField ?? HeaderSyntax.hostProblem(version: version, hosts: hosts) }

    /// The path part of the URL, still percent-encoded (MHD hands it over raw, without query).
    var rawPath: String {
        if let q = rawURL.firstIndex(of: "?") { return String(rawURL[..<q]) }
        return rawURL
    }

    func request() -> Request {
        let decoded = StaticFiles.percentDecode(rawPath) ?? rawPath
        var r = Request(method: method, path: decoded, query: query, headers: headers, body: body)
        var address = [CChar](repeating: 0, count: 64)
        cmhd_client_address(connection, &address, socklen_t(address.count))
        r.remoteAddress = trustedProxies.client(peer: String(cString: address), headers: headers)
        return r
    }
}
