// libturbojpeg failures, carrying the library's own message and the call that failed.

import CTurboJPEG

public struct JPEGError: Error, Sendable, CustomStringConvertible {
    public let call: String
    public let message: String

    public var description: String { "\(call): \(message)" }

    /// Reads tjGetErrorStr2 once, right after the failing call.
    static func last(_ call: String, _ handle: tjhandle?) -> JPEGError {
        let text = tjGetErrorStr2(handle).map { String(cString: $0) } ?? "unknown error"
        return JPEGError(call: call, message: text)
    }
}
