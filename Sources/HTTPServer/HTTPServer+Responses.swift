// Responses to libmicrohttpd: a handler's Response becomes an MHD response (bytes, a file,
// or a stream read by StreamConnection), with the headers every answer carries (CORS, the
// Digest challenge) — the other half of HTTPServer.swift's bridge.

import CMicroHTTPD
import Foundation
import Logging
import SystemSupport

extension HTTPServer {
    // A streamed body is read from MHD's polling thread through these two callbacks.
    static let streamReader: MHD_ContentReaderCallback = { cls, _, buf, max in
        Unmanaged<StreamConnection>.fromOpaque(cls!).takeUnretainedValue().read(into: buf!, max: max)
    }

    static let streamFree: MHD_ContentReaderFreeCallback = { cls in
        let stream = Unmanaged<StreamConnection>.fromOpaque(cls!).takeRetainedValue()
        stream.didClose()
        // The server outlives every response (stop() waits for MHD_stop_daemon).
        if let server = stream.server { server.shared.withLock { _ = $0.streams.removeValue(forKey: ObjectIdentifier(stream)) } }
    }

    func queue(_ response: Response, _ ctx: ConnectionContext) -> MHD_Result {
        ctx.answered = true
        var headers = response.headers + cors(origin: ctx.headers["origin"])
        var body = response.body
        if ctx.method == "HEAD", case .stream(let s) = body {
            s.cancel()  // HEAD gets the stream's headers, never its endless body
            body = .bytes([])
        }
        let mhdResponse: OpaquePointer?
        switch body {
        case .bytes(let bytes):
            mhdResponse = bytes.withUnsafeBytes {
                MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: $0.baseAddress),
                                                CMHD_RESPMEM_MUST_COPY)
            }
        case .file(let file):
            // libmicrohttpd owns the descriptor from here and closes it with the response.
            if let fd = file.take() {
                mhdResponse = MHD_create_response_from_fd_at_offset64(UInt64(file.length), fd, UInt64(file.offset))
                if mhdResponse == nil { try? Sys.close(fd, "a file body's") }
            } else {
                mhdResponse = nil
            }
        case .stream(let streamBody):
            let stream = StreamConnection(body: streamBody, connection: ctx.connection)
            stream.server = self
            shared.withLock { $0.streams[ObjectIdentifier(stream)] = stream }
            mhdResponse = MHD_create_response_from_callback(CMHD_SIZE_UNKNOWN, 32 * 1024, Self.streamReader,
                                                            Unmanaged.passRetained(stream).toOpaque(), Self.streamFree)
            streamBody.attach(wake: stream.waker)
            headers.append(("Connection", "close"))
            cmhd_set_connection_timeout(ctx.connection, Self.streamIdleTimeout)  // not the header timeout
        }
        guard let mhdResponse else { return .NO }
        for (name, value) in headers { MHD_add_response_header(mhdResponse, name, value) }
        let rc: MHD_Result
        if let c = response.challenge, let digest = c.digest {
            // libmicrohttpd adds the Digest challenge with a nonce it can check later.
            rc = MHD_queue_auth_fail_response2(ctx.connection, c.realm, Self.digestOpaque, mhdResponse,
                                               c.stale ? 1 : 0, digest.mhd)
            Self.canonicalizeDigestAlgorithm(mhdResponse)
        } else {
            rc = MHD_queue_response(ctx.connection, UInt32(response.status), mhdResponse)
        }
        // Basic after Digest: a client that reads only the first challenge (aiohttp's
        // DigestAuthMiddleware, onvif-zeep-async's snapshots) must find Digest, the stronger
        // scheme, as IP cameras offer it. libmicrohttpd keeps headers in the order added and
        // serialises them only after the access handler returns, so this one still goes last.
        if let c = response.challenge, c.basic {
            MHD_add_response_header(mhdResponse, "WWW-Authenticate", "Basic realm=\"\(c.realm)\", charset=\"UTF-8\"")
        }
        MHD_destroy_response(mhdResponse)
        return rc
    }

    static let digestOpaque = "0b5f3a1c9e7d4f26"

    /// libmicrohttpd 0.9.75 writes `algorithm=md5` / `sha-256`; RFC 7616 spells them `MD5`
    /// and `SHA-256`, and FFmpeg's Digest (Home Assistant's ffmpeg camera, `ffmpeg -i
    /// http://user:pw@…`) compares case-sensitively and gives up on the lower-case form.
    /// The headers are serialised only after the access handler returns, so the queued
    /// response can still be corrected here.
    static func canonicalizeDigestAlgorithm(_ response: OpaquePointer) {
        final class Found { var values: [String] = [] }
        let found = Found()
        _ = MHD_get_response_headers(response, { cls, _, key, value in
            if let key, let value, String(cString: key).lowercased() == "www-authenticate" {
                let v = String(cString: value)
                if v.hasPrefix("Digest ") { Unmanaged<Found>.fromOpaque(cls!).takeUnretainedValue().values.append(v) }
            }
            return MHD_Result.YES
        }, Unmanaged.passUnretained(found).toOpaque())
        for v in found.values {
            let fixed = v.replacingOccurrences(of: "algorithm=md5", with: "algorithm=MD5")
                .replacingOccurrences(of: "algorithm=sha-256", with: "algorithm=SHA-256")
            guard fixed != v else { continue }
            _ = MHD_del_response_header(response, "WWW-Authenticate", v)
            _ = MHD_add_response_header(response, "WWW-Authenticate", fixed)
        }
    }

    /// CORS: `*` allows any origin but never with credentials; a listed origin is echoed
    /// back with credentials allowed.
    func cors(origin: String?) -> [(String, String)] {
        let allowed = configuration.allowOrigins
        guard !allowed.isEmpty else { return [] }
        var out: [(String, String)]
        if allowed.contains("*") {
            out = [("Access-Control-Allow-Origin", "*")]
        } else if let origin, allowed.contains(origin) {
            out = [("Access-Control-Allow-Origin", origin), ("Access-Control-Allow-Credentials", "true"), ("Vary", "Origin")]
        } else {
            return [("Vary", "Origin")]
        }
        out.append(("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE, HEAD, OPTIONS"))
        out.append(("Access-Control-Allow-Headers", "Content-Type, Authorization, If-Match"))
        out.append(("Access-Control-Expose-Headers", configuration.exposedHeaders.joined(separator: ", ")))
        return out
    }
}
