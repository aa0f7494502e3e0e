// A body served straight from an open file (libmicrohttpd reads it, with sendfile where it
// can), and the one byte range a request may ask of it (RFC 9110 §14).

import Glibc
import SystemSupport

/// An open file descriptor and the part of it to send. The response takes the descriptor;
/// one never handed over is closed when the body goes.
public final class FileBody: Sendable {
    private let descriptor: Locked<Int32>
    public let offset: Int64
    public let length: Int64

    public init(fd: Int32, offset: Int64, length: Int64) {
        descriptor = Locked(fd)
        self.offset = offset
        self.length = length
    }

    /// The descriptor, once: whoever takes it closes it.
    func take() -> Int32? {
        descriptor.withLock { fd in
            defer { fd = -1 }
            return fd >= 0 ? fd : nil
        }
    }

    deinit { if let fd = take() { try? Sys.close(fd, "a file body's") } }
}

/// What a `Range` header asks of a representation of `size` bytes.
public enum ByteRange: Equatable, Sendable {
    /// No usable range (none, several, or not bytes): send it all with 200.
    case whole
    /// First and last byte, inclusive: send them with 206.
    case part(first: Int64, last: Int64)
    /// A range that starts past the end: 416.
    case unsatisfiable

    public static func parse(_ header: String?, size: Int64) -> ByteRange {
        guard let header else { return .whole }
        let h = header.trimmedSpaces()
        guard h.lowercased().hasPrefix("bytes=") else { return .whole }  // another unit: ignore it
        let spec = String(h.dropFirst(6)).trimmedSpaces()
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }  // several: send all
        let a = String(spec[..<dash]).trimmedSpaces(), b = String(spec[spec.index(after: dash)...]).trimmedSpaces()
        func number(_ s: String) -> Int64? { s.isEmpty || !s.allSatisfy(\.isASCIINumber) ? nil : Int64(s) }
        if a.isEmpty {
            // The last n bytes.
            guard let n = number(b) else { return .whole }
            guard n > 0, size > 0 else { return .unsatisfiable }
            return .part(first: max(0, size - n), last: size - 1)
        }
        guard let first = number(a) else { return .whole }
        let last: Int64
        if b.isEmpty { last = size - 1 } else {
            guard let l = number(b), l >= first else { return .whole }  // invalid: ignore it
            last = min(l, size - 1)
        }
        guard first < size else { return .unsatisfiable }
        return .part(first: first, last: last)
    }
}

extension Character {
    fileprivate var isASCIINumber: Bool { ("0"..."9").contains(self) }
}

extension String {
    fileprivate func trimmedSpaces() -> String {
        let set = " \t"
        var s = Substring(self)
        while let c = s.first, set.contains(c) { s = s.dropFirst() }
        while let c = s.last, set.contains(c) { s = s.dropLast() }
        return String(s)
    }
}
