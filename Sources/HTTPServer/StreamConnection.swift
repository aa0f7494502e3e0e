// Drives one streamed response (MJPEG or SSE) from libmicrohttpd's content-reader callback.
// When the body has nothing to send the connection is suspended, so MHD's single polling
// thread never spins; the body's waker resumes it. A wake that arrives before the suspend
// is remembered (`wakePending`), so none is lost.

import CMicroHTTPD
import Foundation

final class StreamConnection: @unchecked Sendable {
    let body: any StreamBody
    weak var server: HTTPServer?
    private let connection: OpaquePointer
    private let lock = NSLock()
    private var pending: [UInt8] = []
    private var offset = 0
    private var suspended = false
    private var wakePending = false
    private var finishing = false
    private var closed = false

    init(body: any StreamBody, connection: OpaquePointer) {
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
            if lock.withLock({ finishing }) { return CMHD_CONTENT_READER_END_OF_STREAM }
            switch body.next() {
            case .data(let bytes):
                pending = bytes
                offset = 0
            case .end:
                return CMHD_CONTENT_READER_END_OF_STREAM
            case .wait:
                let park = lock.withLock { () -> Bool in
                    if wakePending || finishing { wakePending = false; return false }
                    suspended = true
                    MHD_suspend_connection(connection)
                    return true
                }
                if park { return 0 }
            }
        }
    }

    /// Called by the body (any thread) when there may be more to send.
    func wake() {
        lock.withLock {
            guard !closed else { return }
            if suspended {
                suspended = false
                MHD_resume_connection(connection)
            } else {
                wakePending = true
            }
        }
    }

    /// Ends the stream at the next read (server stopping); resumes it if parked.
    func finish() {
        lock.withLock { finishing = true }
        wake()
    }

    /// The response is gone: never touch the connection again.
    func didClose() {
        lock.withLock { closed = true }
        body.close()
    }
}
