// Per-request state that libmicrohttpd keeps for us in `*con_cls` across the several calls
// of the access handler (first call, upload chunks, final call, and the call after resume).

import CMicroHTTPD
import Foundation

final class ConnectionContext: @unchecked Sendable {
    let connection: OpaquePointer
    let method: String
    let rawURL: String
    var headers: [String: String] = [:]
    /// Every Content-Length header's value, in order (`headers` keeps only the last).
    var contentLengths: [String] = []
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
    var suspended = false

    init(connection: OpaquePointer, method: String, rawURL: String) {
        self.connection = connection
        self.method = method
        self.rawURL = rawURL
    }

    /// Reads request headers and the (MHD-decoded) query arguments.
    func collectValues() {
        let box = Unmanaged.passUnretained(self).toOpaque()
        MHD_get_connection_values(connection, .HEADER_KIND, { cls, _, key, value in
            let ctx = Unmanaged<ConnectionContext>.fromOpaque(cls!).takeUnretainedValue()
            guard let key else { return MHD_Result.YES }
            let name = String(cString: key).lowercased(), v = value.map { String(cString: $0) } ?? ""
            ctx.headers[name] = v
            if name == "content-length" { ctx.contentLengths.append(v) }
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
        r.remoteAddress = String(cString: address)
        return r
    }
}
