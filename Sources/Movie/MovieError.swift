// What a movie call can fail with: the library or system call that failed and its code,
// read once, right after the call.

import CFFmpeg
import CameraCore
import SystemSupport

public enum MovieError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An FFmpeg call answered a negative AVERROR.
    case library(call: String, code: Int32)
    /// A system call failed (open, write, fdatasync, rename...).
    case system(SystemError)
    /// A setting the encoder cannot take (unknown preset, odd size...).
    case unsupported(String)

    /// The errno behind the failure, if there is one (AVERROR(e) is -e).
    public var errno: Int32? {
        switch self {
        case .library(_, let code): code < 0 && code > -4096 ? -code : nil
        case .system(let e): e.errno
        case .unsupported: nil
        }
    }

    /// The disk is full or the file reached the size the system allows.
    public var isStorageFull: Bool { errno == ENOSPC || errno == EFBIG || errno == EDQUOT }

    public var description: String {
        switch self {
        case .library(let call, let code):
            return Self.describe(call, code)
        case .system(let e): return e.description
        case .unsupported(let why): return why
        }
    }

    private static func describe(_ call: String, _ code: Int32) -> String {
            var buf = [CChar](repeating: 0, count: 128)
            cff_strerror(code, &buf, buf.count)
            return "\(call) failed: \(String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)) (\(code))"
    }

    /// Runs system calls (`Sys`), a failure thrown as `.system` with the SystemError as it was.
    static func systemCall<R>(_ body: () throws(SystemError) -> R) throws(MovieError) -> R {
        do throws(SystemError) { return try body() } catch { throw .system(error) }
    }

    /// Throws `.library` when `code` is negative.
    @discardableResult
    static func check(_ code: Int32, _ call: String) throws(MovieError) -> Int32 {
        guard code >= 0 else { throw .library(call: call, code: code) }
        return code
    }
}
