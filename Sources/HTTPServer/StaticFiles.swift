// Serves files from one directory and never from outside it: the URL path is decoded,
// dot segments are refused, and the resolved real path (symlinks followed) must still lie
// inside the directory's real path.

import Foundation
import SystemSupport

public struct StaticFiles: Sendable {
    public let root: String

    /// `root` is resolved once; a missing directory serves nothing.
    public init(directory: String) {
        root = StaticFiles.realPath(directory) ?? directory
    }

    /// The file a URL path names, or nil when it is missing or would escape the root.
    /// `path` is the raw (still percent-encoded) URL path.
    public func resolve(_ path: String) -> String? {
        // Checked on scalars, as the file system reads bytes: on graphemes a "\0", "/" or "."
        // that clusters with a neighbouring scalar ("x\u{600}/.env", ".\u{301}env") would pass.
        guard let decoded = Self.percentDecode(path), !decoded.unicodeScalars.contains("\0"),
              !decoded.unicodeScalars.contains("\\") else { return nil }
        var parts: [Substring] = []
        for part in decoded.unicodeScalars.split(separator: "/", omittingEmptySubsequences: true) {
            if part.count == 1 && part.first == "." { continue }
            if part.first == "." { return nil }  // no traversal (".."), no dotfiles
            parts.append(Substring(part))
        }
        var candidate = root + "/" + parts.joined(separator: "/")
        if Sys.isDirectory(candidate) {
            candidate += "/index.html"
        }
        guard let real = Self.realPath(candidate),
              real.hasPrefix(root + "/"),
              Sys.exists(real), !Sys.isDirectory(real)
        else { return nil }
        return real
    }

    public func response(for path: String) -> Response? {
        guard let file = resolve(path), let data = try? Sys.readFile(file) else { return nil }
        return Response(status: 200, contentType: Self.contentType(file), bytes: data,
                        headers: [("Cache-Control", "no-cache")])
    }

    static func contentType(_ file: String) -> String {
        switch (file as NSString).pathExtension.lowercased() {
        case "html", "htm": "text/html; charset=utf-8"
        case "js": "text/javascript; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "json": "application/json"
        case "yaml", "yml": "application/yaml"
        case "svg": "image/svg+xml"
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "ico": "image/x-icon"
        case "txt", "md": "text/plain; charset=utf-8"
        default: "application/octet-stream"
        }
    }

    /// Strict percent-decoding: a malformed escape or invalid UTF-8 rejects the input.
    /// `plusIsSpace` for query arguments (form encoding).
    public static func percentDecode(_ s: String, plusIsSpace: Bool = false) -> String? {
        var bytes: [UInt8] = []
        var it = Array(s.utf8)[...]
        while let b = it.popFirst() {
            if b == UInt8(ascii: "%") {
                guard it.count >= 2, let v = UInt8(String(decoding: it.prefix(2), as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(v)
                it = it.dropFirst(2)
            } else if plusIsSpace && b == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else {
                bytes.append(b)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    static func realPath(_ path: String) -> String? { try? Sys.realpath(path) }
}
