// libmicrohttpd's callbacks into the server: the access handler, request completed,
// connection started/closed and the accept policy. They run on MHD's pool threads, any of
// them at once, and never await: what they share is behind locks.

import CMicroHTTPD
import Foundation

extension HTTPServer {
    // MARK: - C callbacks (no await in here: they run on MHD's polling thread)

    static let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, version, upload, uploadSize, conCls in
        let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
        return server.handle(connection: connection!, url: url, method: method, version: version,
                             upload: upload, uploadSize: uploadSize!, conCls: conCls!)
    }

    static let completedHandler: MHD_RequestCompletedCallback = { cls, connection, conCls, _ in
        guard let conCls, let raw = conCls.pointee else { return }
        let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
        if let connection { server.addressLimits.requestEnded(connection) }
        Unmanaged<ConnectionContext>.fromOpaque(raw).release()
        conCls.pointee = nil
        server.requestEnded()
    }

    static let connectionHandler: MHD_NotifyConnectionCallback = { cls, connection, socketContext, event in
        let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
        let started = event == CMHD_CONNECTION_NOTIFY_STARTED
        let certificates = server.shared.withLock { s in
            s.openConnections += started ? 1 : -1
            return s.certificates
        }
        // Per-address counts and the certificate a TLS connection may hold.
        if started { server.addressLimits.opened(connection!, address: cmhd_client_ipv4(connection)) } else { server.addressLimits.closed(connection!) }
        if let tls = certificates, let socketContext {
            if started { cmhd_tls_connection_started(tls.raw, socketContext) } else { cmhd_tls_connection_closed(tls.raw, socketContext) }
        }
    }

    /// Before a connection is set up: an address far over its limit is closed at once.
    static let acceptPolicy: MHD_AcceptPolicyCallback = { cls, addr, len in
        let server = Unmanaged<HTTPServer>.fromOpaque(cls!).takeUnretainedValue()
        return server.addressLimits.admits(cmhd_sockaddr_ipv4(addr, len), limit: server.configuration.maxConnectionsPerAddress,
                                           capacity: server.configuration.maxConnections)
            ? .YES : .NO
    }

    func requestEnded() {
        drained.lock()
        shared.withLock { $0.activeRequests -= 1 }
        drained.broadcast()
        drained.unlock()
    }
}
