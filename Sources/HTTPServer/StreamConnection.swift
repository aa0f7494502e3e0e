// Pumps one streamed response (MJPEG, fMP4, SSE) from libmicrohttpd's content-reader
// callback: the body is a subscription (Subscriptions), pulled here on MHD's polling thread —
// the hub's item goes to the socket with nothing between. When the subscription has nothing
// to send the connection is suspended, so the polling thread never spins; its wake resumes
// it. A wake that arrives before the suspend is remembered (`wakePending`), so none is lost.

import CMicroHTTPD
import Subscriptions
import SystemSupport

// @unchecked: `pending` and `offset` are touched only by `read`, on MHD's polling thread;
// everything another thread sees is in `flags`.
final class StreamConnection: @unchecked Sendable {
    let body: any Subscription<[UInt8]>
    /// Set once when the stream is registered, before MHD can call back.
    weak var server: HTTPServer?
    private let connection: OpaquePointer
    private var pending: [UInt8] = []
    private var offset = 0

    private struct Flags {
        var suspended = false
        var wakePending = false
        var finishing = false
        var closed = false
    }
    /// Suspending and resuming happen under this lock: a wake can then never resume a
    /// connection that is not suspended yet, nor one MHD has closed.
    private let flags = Locked(Flags())

    init(body: any Subscription<[UInt8]>, connection: OpaquePointer) {
        self.body = body
        self.connection = connection
    }

    /// The content-reader callback's body; runs on MHD's polling thread.
    func read(into buf: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        while true {
            if offset < pending.count {
                let n = min(max, pending.count - offset)
                pending.withUnsafeBytes { src in
                    UnsafeMutableRawPointer(buf).copyMemory(from: src.baseAddress! + offset, byteCount: n)
                }
                offset += n
                return n
            }
            if flags.withLock({ $0.finishing }) { return CMHD_CONTENT_READER_END_OF_STREAM }
            switch body.next() {
            case .item(let bytes):
                pending = bytes
                offset = 0
            case .end:
                return CMHD_CONTENT_READER_END_OF_STREAM
            case .wait:
                let connection = connection
                let park = flags.withLock { f -> Bool in
                    if f.wakePending || f.finishing { f.wakePending = false; return false }
                    f.suspended = true
                    MHD_suspend_connection(connection)
                    return true
                }
                if park { return 0 }
            }
        }
    }

    /// Called by the body (any thread) when there may be more to send.
    func wake() { Self.wake(flags, Connection(raw: connection)) }

    /// The body's waker: what `wake()` does, holding the flags and the connection rather than
    /// this object. A weak reference here (the waker may outlive the response) gave every
    /// StreamConnection a side table, and every retain and release of it on the frame path
    /// took the slow path; the flags' `closed` already guards the connection.
    var waker: @Sendable () -> Void {
        let flags = flags, connection = Connection(raw: connection)
        return { Self.wake(flags, connection) }
    }

    private struct Connection: @unchecked Sendable { let raw: OpaquePointer }  // only touched under `flags`, and never once closed

    private static func wake(_ flags: Locked<Flags>, _ connection: Connection) {
        flags.withLock { f in
            guard !f.closed else { return }
            if f.suspended {
                f.suspended = false
                MHD_resume_connection(connection.raw)
            } else {
                f.wakePending = true
            }
        }
    }

    /// Ends the stream at the next read (server stopping); resumes it if parked.
    func finish() {
        flags.withLock { $0.finishing = true }
        wake()
    }

    /// The response is gone: never touch the connection again.
    func didClose() {
        flags.withLock { $0.closed = true }
        body.cancel()
    }
}
