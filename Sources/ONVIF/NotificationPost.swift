// The one request the device makes of another server: an HTTP POST of a push subscription's
// Notify to its consumer (Home Assistant's webhook, an NVR's listener). libcurl does the HTTP;
// each POST blocks a thread of its own for at most `timeout`, never Swift's cooperative pool.

import CCurl
import SystemSupport

/// What became of one POST.
public enum PostOutcome: Sendable, Equatable {
    /// The consumer answered (any status: a 4xx/5xx is its word, logged by the caller).
    case answered(status: Int)
    /// No answer: libcurl's reason (refused, timed out, no such host, TLS failed).
    case failed(String)
}

/// Posts a body to an address: the seam a test's consumer stands behind.
public typealias NotificationPost = @Sendable (_ address: String, _ body: [UInt8]) async -> PostOutcome

public enum CurlPost {
    /// A POST through libcurl, with SOAP 1.2's content type, on a thread of its own.
    public static func post(timeout: Double = 5) -> NotificationPost {
        { address, body in
            await onOwnThread("onvif-notify") {
                var status = 0
                let size = 512
                var error = [CChar](repeating: 0, count: size)
                let code = body.withUnsafeBytes { b in
                    vf_http_post(address, b.baseAddress, b.count, ONVIFAnswer.contentType, Int(timeout * 1000), &status, &error, size)
                }
                guard code == 0 else {
                    let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                    return .failed("POST \(address): \(reason) (libcurl \(code))")
                }
                return .answered(status: status)
            }
        }
    }
}
