// The libmicrohttpd bridge: a pool of polling threads (one per core by default), each with
// its own epoll set and its share of the connections, and suspend/resume for everything that
// waits (async handlers, streams). A published frame wakes every viewer, and each pool thread
// writes its own viewers' parts, so the parts of one frame go out in parallel (one polling
// thread wrote them one after another: the 100th viewer waited for 99 sends). Every callback
// below may run on any pool thread at once: what they share is behind locks.
// This is the only file (with its helpers) that touches MHD.

import CMicroHTTPD
import Foundation
import Logging
import SystemSupport

// @unchecked: `digestKey` and `port` are written only by start() (the key before the daemon
// serves, the port once it is bound; no callback reads it), which the owner calls before
// anything else and never concurrently; everything the callbacks share is `shared`.
public final class HTTPServer: @unchecked Sendable {
    public let configuration: ServerConfiguration
    private let router: Router
    private let staticFiles: StaticFiles?
    /// The key libmicrohttpd signs Digest nonces with (kept alive while the daemon runs).
    private var digestKey: [UInt8] = []
    private let logger: Logger

    /// What MHD's polling thread, handler tasks and the owner share. Suspending and resuming
    /// a connection happen under it, so a resume can never overtake its suspend.
    struct Shared {
        var daemon: Daemon?
        var stopping = false
        var openConnections = 0
        var activeRequests = 0
        var suspendedRequests: [ObjectIdentifier: ConnectionContext] = [:]
        var streams: [ObjectIdentifier: StreamConnection] = [:]
        var certificates: CertificateStore?
    }
    struct Daemon: @unchecked Sendable { let raw: OpaquePointer }  // libmicrohttpd's daemon is thread-safe; stopped once, under `shared`
    let shared = Locked(Shared())
    /// stop() waits on it for running handlers to answer (signalled when a request ends).
    let drained = NSCondition()
    public private(set) var port: Int = 0
    // Limits and TLS (AddressLimits.swift, TLS.swift).
    let addressLimits: AddressLimits
    /// Idle timeout of a connection streaming a response (the header timeout is the default).
    static let streamIdleTimeout: UInt32 = 60
    /// Oversized bodies up to this size are read and dropped before the 413 (see above).
    static let drainLimit = 1 << 20

    public init(configuration: ServerConfiguration, router: Router, logger: Logger = Logger(label: "http")) {
        self.configuration = configuration
        self.router = router
        self.logger = logger
        staticFiles = configuration.staticFiles
        let proxies = configuration.trustedProxies
        addressLimits = AddressLimits(isTrusted: { proxies.contains(ipv4: $0) })
    }

    deinit { assert(shared.withLock { $0.daemon == nil }, "HTTPServer released while running: call stop()") }

    /// Open connections right now (streams included).
    public var connectionCount: Int { shared.withLock { $0.openConnections } }

    // MARK: - Start and stop

    public func start() throws {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(configuration.port).bigEndian)
        guard inet_pton(AF_INET, configuration.host, &addr.sin_addr) == 1 else {
            throw ServerError.badAddress(configuration.host)
        }
        let flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue |
            MHD_ALLOW_SUSPEND_RESUME.rawValue
        let me = Unmanaged.passUnretained(self).toOpaque()
        // MHD's own limit sits above ours so that connections past ours can still be told 503.
        let mhdLimit = UInt32(configuration.maxConnections + 32)
        var certificates: CertificateStore?
        if let files = configuration.tls {
            let store = CertificateStore()
            try store.load(files)
            certificates = store
        }
        shared.withLock { $0.certificates = certificates }
        // Digest nonces are signed with these bytes: fresh for every start.
        // Read whole, or the server does not start: a key of zeros would make every nonce forgeable.
        var nonceKey = [UInt8](repeating: 0, count: 32)
        let random = try Sys.open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        defer { try? Sys.close(random, "/dev/urandom") }
        let got = try nonceKey.withUnsafeMutableBytes { key throws(SystemError) in try Sys.read(random, into: key, "/dev/urandom") }
        guard got == nonceKey.count else { throw SystemError(call: "read /dev/urandom (\(got) of \(nonceKey.count) bytes)", errno: EIO) }
        digestKey = nonceKey
        // MHD's timeout is the header timeout: it runs from accept (TLS handshake included)
        // and between requests; suspended connections (streams and handlers waiting) have none,
        // and a connection streaming a response gets `streamIdleTimeout` (see queue()).
        guard let d = digestKey.withUnsafeBytes({ key in
            cmhd_start(UInt32(flags), &addr, Self.accessHandler, me, Self.completedHandler, me,
                       Self.connectionHandler, me, Self.acceptPolicy, me, mhdLimit,
                       UInt32(configuration.headerTimeout), certificates?.raw, ServerConfiguration.tlsPriorities,
                       key.baseAddress, key.count, UInt32(configuration.threads))
        }) else {
            let e = SystemError.last("MHD_start_daemon")
            shared.withLock { $0.certificates = nil }
            throw ServerError.startFailed(host: configuration.host, port: configuration.port, cause: e)
        }
        shared.withLock { $0.daemon = Daemon(raw: d) }
        port = Int(cmhd_bound_port(d))
    }

    /// Graceful stop: new requests are answered 503 (stopping), streams end, pending handlers
    /// get a few seconds to answer, then every suspended connection is resumed (MHD requires
    /// it) and the daemon stops. Safe to call twice.
    ///
    /// Not MHD_quiesce_daemon: in libmicrohttpd 0.9.75 it and the polling thread may both take
    /// the listen socket out of the epoll set; the second fails and MHD aborts the process
    /// ("Failed to remove listen FD from epoll set", seen once in make test-v4l2's VM).
    public func stop(grace: Double = 3) {
        let (daemon, toFinish) = shared.withLock { s -> (Daemon?, [StreamConnection]) in
            guard let daemon = s.daemon, !s.stopping else { return (nil, []) }
            s.stopping = true
            return (daemon, Array(s.streams.values))
        }
        guard let d = daemon?.raw else { return }
        for s in toFinish { s.finish() }
        let deadline = Date().addingTimeInterval(grace)
        drained.lock()
        while shared.withLock({ $0.activeRequests }) > 0 && drained.wait(until: deadline) {}
        drained.unlock()
        let streams = shared.withLock { Array($0.streams.values) }
        for s in streams { s.finish() }
        let stopping = answer(ServerRefusal.unavailable("The server is stopping."))
        shared.withLock { s in
            for ctx in s.suspendedRequests.values {
                if ctx.pendingResponse == nil { ctx.pendingResponse = stopping }
                ctx.suspended = false
                MHD_resume_connection(ctx.connection)
            }
            s.suspendedRequests.removeAll()
        }
        MHD_stop_daemon(d)  // closes the listen socket too
        shared.withLock { $0.daemon = nil; $0.certificates = nil }
    }

    // MARK: - TLS

    /// Reads the configured certificate and key again: new handshakes get the new pair,
    /// open connections (running streams) keep theirs. On error the old pair stays in use.
    /// Returns the new certificate's SHA-256 fingerprint.
    @discardableResult
    public func reloadCertificate() throws -> String {
        guard let files = configuration.tls, let store = shared.withLock({ $0.certificates }) else {
            throw ServerError.notTLS
        }
        try store.load(files)
        return store.fingerprint
    }

    /// SHA-256 fingerprint of the certificate new handshakes get ("" without TLS).
    public var certificateFingerprint: String { shared.withLock { $0.certificates }?.fingerprint ?? "" }

    // MARK: - Request handling

    func handle(connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
                        version: UnsafePointer<CChar>?, upload: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>,
                        conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        guard let raw = conCls.pointee else {
            // First call: headers are in; the body (if any) comes in later calls.
            let ctx = ConnectionContext(connection: connection, method: method.map { String(cString: $0) } ?? "GET",
                                        rawURL: url.map { String(cString: $0) } ?? "/",
                                        version: version.map { String(cString: $0) } ?? "")
            conCls.pointee = Unmanaged.passRetained(ctx).toOpaque()
            let limit = configuration.maxConnections
            let overLimit = shared.withLock { s -> Bool in
                s.activeRequests += 1
                return s.openConnections > limit || s.stopping
            }
            ctx.collectValues()
            ctx.trustedProxies = configuration.trustedProxies
            if overLimit {
                return queue(answer(ServerRefusal.unavailable(
                    "Too many connections (limit \(configuration.maxConnections)); try again later.")), ctx)
            }
            switch addressLimits.requestArrived(connection, limit: configuration.maxConnectionsPerAddress, capacity: limit) {
            case .tooManyWaiting(let n)?:
                return queue(answer(ServerRefusal.unavailable(
                    "Too many connections from this address (limit \(n)) stalled before their request; close some and try again.")), ctx)
            case .overFairShare(let holds, let share)?:
                return queue(answer(ServerRefusal.unavailable(
                    "The server is nearly full and this address holds \(holds) connections (its share: \(share)); try again later.")), ctx)
            case nil: break
            }
            if ctx.conflictingContentLengths {
                return queue(answer(ServerRefusal.badRequest("Content-Length is given more than once, with different values.")), ctx)
            }
            if let problem = ctx.malformedHead {
                // Where this head ends and the next request starts is no longer certain.
                return queue(answer(ServerRefusal.badRequest(problem)), ctx)
            }
            if let length = ctx.headers["content-length"].flatMap({ Int($0) }), length > configuration.maxBodyBytes {
                // Answering before the body is read makes the kernel reset the connection
                // under a client still sending, and the client may never see the 413. So a
                // moderately large body is read and dropped first; only a huge one is cut. A
                // client that waits to be told before it sends (Expect: 100-continue) is told
                // now: the 413 instead of "100 Continue", and its body never comes (RFC 9110
                // §10.1.1).
                if length > Self.drainLimit || ctx.headers["expect"]?.lowercased() == "100-continue" {
                    return queue(answer(ServerRefusal.bodyTooLarge(limit: configuration.maxBodyBytes)), ctx)
                }
                ctx.tooLarge = true
            }
            return .YES
        }
        let ctx = Unmanaged<ConnectionContext>.fromOpaque(raw).takeUnretainedValue()
        if ctx.answered { uploadSize.pointee = 0; return .YES }
        if uploadSize.pointee > 0 {
            // A body without a (truthful) Content-Length is capped here as it arrives.
            if ctx.tooLarge || ctx.body.count + uploadSize.pointee > configuration.maxBodyBytes {
                ctx.tooLarge = true
                ctx.discarded += uploadSize.pointee
                ctx.body = []
                uploadSize.pointee = 0
                if ctx.discarded > Self.drainLimit {
                    return queue(answer(ServerRefusal.bodyTooLarge(limit: configuration.maxBodyBytes)), ctx)
                }
                return .YES
            }
            ctx.body.append(contentsOf: UnsafeRawBufferPointer(start: upload, count: uploadSize.pointee))
            uploadSize.pointee = 0
            return .YES
        }
        if let ready = shared.withLock({ _ -> Response? in
            defer { ctx.pendingResponse = nil }
            return ctx.pendingResponse
        }) {
            return queue(ready, ctx)
        }
        if ctx.tooLarge { return queue(answer(ServerRefusal.bodyTooLarge(limit: configuration.maxBodyBytes)), ctx) }
        if ctx.dispatched { return .YES }  // spurious call while the handler runs
        return dispatch(ctx)
    }

    private func dispatch(_ ctx: ConnectionContext) -> MHD_Result {
        var request = ctx.request()
        // Preflights are answered without credentials (browsers send none).
        if request.method != "OPTIONS", let gate = configuration.gate,
           let refusal = gate(&request, DigestAuthorization(connection: ctx.connection)) {
            return queue(refusal, ctx)
        }
        switch router.match(method: request.method, path: ctx.rawPath) {
        case .found(let handler, let parameters):
            request.parameters = parameters
            if request.method == "OPTIONS" { return queue(options(ctx.rawPath), ctx) }
            ctx.dispatched = true
            shared.withLock { s in
                ctx.suspended = true
                s.suspendedRequests[ObjectIdentifier(ctx)] = ctx
                MHD_suspend_connection(ctx.connection)
            }
            Task { [self] in
                let response: Response
                do { response = try await handler(request) } catch let e as any ResponseError {
                    response = answer(e)
                } catch {
                    logger.error("\(request.method) \(request.path): \(error)")
                    response = answer(ServerRefusal.internalError("The server failed to answer: \(error)"))
                }
                complete(ctx, response)
            }
            return .YES
        case .methodNotAllowed(let allow):
            if request.method == "OPTIONS" { return queue(options(ctx.rawPath), ctx) }
            return queue(answer(ServerRefusal.methodNotAllowed(method: request.method, allow: allow)), ctx)
        case .notFound:
            if request.method == "GET" || request.method == "HEAD",
               let file = staticFiles?.response(for: ctx.rawPath) {
                return queue(file, ctx)
            }
            if request.method == "OPTIONS" { return queue(options(ctx.rawPath), ctx) }
            return queue(answer(ServerRefusal.notFound(path: request.path)), ctx)
        }
    }

    /// The application's rendering of an error. A 400 for the request's head or framing, a 413
    /// and a 503 close the connection: what follows on it can no longer be trusted, or is not wanted.
    func answer(_ e: any ResponseError) -> Response {
        var r = configuration.renderError(e)
        let closes = e.status == 503 || e.status == 413 || (e as? ServerRefusal).map { if case .badRequest = $0 { true } else { false } } == true
        if closes { r.headers.append(("Connection", "close")) }
        return r
    }

    /// A handler finished on some task thread: hand its response to the parked connection.
    private func complete(_ ctx: ConnectionContext, _ response: Response) {
        shared.withLock { s in
            ctx.pendingResponse = response
            guard ctx.suspended, s.daemon != nil else { return }
            ctx.suspended = false
            s.suspendedRequests.removeValue(forKey: ObjectIdentifier(ctx))
            MHD_resume_connection(ctx.connection)
        }
    }

    private func options(_ path: String) -> Response {
        let allow = router.allowedMethods(path: path)
        return Response(status: 204, headers: [("Allow", allow.isEmpty ? "GET, HEAD, OPTIONS" : allow.joined(separator: ", "))])
    }

}

public enum ServerError: Error, CustomStringConvertible {
    case badAddress(String)
    case startFailed(host: String, port: Int, cause: SystemError)
    case notTLS

    public var description: String {
        switch self {
        case .badAddress(let h): "server.host: '\(h)' is not an IPv4 address"
        case .startFailed(let h, let p, let e): "cannot listen on \(h):\(p): \(String(cString: strerror(e.errno)))"
        case .notTLS: "the server does not use TLS (server.tls is not set)"
        }
    }
}
