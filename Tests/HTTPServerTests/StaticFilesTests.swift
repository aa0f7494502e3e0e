import Foundation
import Testing
@testable import HTTPServer

/// The static-path table: what may and may not be served from Public/. Built in a temp dir
/// with a secret file beside the root and symlinks pointing in and out.
@Suite final class StaticFilesTests {
    let base: String
    let files: StaticFiles

    deinit { try? FileManager.default.removeItem(atPath: base) }  // each test's tree goes with it

    init() throws {
        base = NSTemporaryDirectory() + "vf-static-\(UUID().uuidString)"
        let fm = FileManager.default
        try fm.createDirectory(atPath: base + "/Public/css", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: base + "/Public/sub", withIntermediateDirectories: true)
        _ = fm.createFile(atPath: base + "/secret.txt", contents: Data("secret".utf8))
        _ = fm.createFile(atPath: base + "/Public/index.html", contents: Data("<html>".utf8))
        _ = fm.createFile(atPath: base + "/Public/css/style.css", contents: Data("body{}".utf8))
        _ = fm.createFile(atPath: base + "/Public/sub/index.html", contents: Data("sub".utf8))
        _ = fm.createFile(atPath: base + "/Public/a b.txt", contents: Data("space".utf8))
        _ = fm.createFile(atPath: base + "/Public/.env", contents: Data("hidden".utf8))
        try fm.createSymbolicLink(atPath: base + "/Public/escape.txt", withDestinationPath: base + "/secret.txt")
        try fm.createSymbolicLink(atPath: base + "/Public/up", withDestinationPath: base)
        try fm.createSymbolicLink(atPath: base + "/Public/alias.css", withDestinationPath: base + "/Public/css/style.css")
        // Names whose "/" or "." a grapheme would hide (found by Fuzz/FuzzRouter): a directory
        // ending in a prepended scalar (U+0600 clusters with the "/" after it), a dotfile whose
        // dot a combining mark follows.
        try fm.createDirectory(atPath: base + "/Public/odd\u{600}", withIntermediateDirectories: true)
        _ = fm.createFile(atPath: base + "/Public/odd\u{600}/.env", contents: Data("hidden".utf8))
        _ = fm.createFile(atPath: base + "/Public/odd\u{600}/plain.txt", contents: Data("plain".utf8))
        _ = fm.createFile(atPath: base + "/Public/.\u{301}env", contents: Data("hidden".utf8))
        files = StaticFiles(directory: base + "/Public")
    }

    static let table: [(path: String, servedFile: String?)] = [
        ("/", "index.html"),
        ("/index.html", "index.html"),
        ("/css/style.css", "css/style.css"),
        ("/./css/./style.css", "css/style.css"),
        ("//css//style.css", "css/style.css"),
        ("/sub/", "sub/index.html"),
        ("/a%20b.txt", "a b.txt"),
        ("/alias.css", "css/style.css"),           // a symlink that stays inside is fine
        ("/../secret.txt", nil),
        ("/css/../../secret.txt", nil),
        ("/%2e%2e/secret.txt", nil),               // encoded dots
        ("/%2E%2E%2Fsecret.txt", nil),             // encoded dots and slash
        ("/css/%2e%2e/%2e%2e/secret.txt", nil),
        ("/..%2fsecret.txt", nil),
        ("/..\\secret.txt", nil),
        ("/escape.txt", nil),                      // symlink out of the root
        ("/up/secret.txt", nil),                   // directory symlink out of the root
        ("/.env", nil),                            // dotfiles
        ("/index.html%00.png", nil),               // NUL
        ("/%zz", nil),                             // malformed escape
        ("/%C0%AE%C0%AE/secret.txt", nil),         // overlong UTF-8 dots
        ("/missing.html", nil),
        ("/css", nil),                             // a directory without index.html
        ("/odd%D8%80/plain.txt", "odd\u{600}/plain.txt"),
        ("/odd%D8%80/.env", nil),                  // "\u{600}/" is one grapheme, still a separator
        ("/.%CC%81env", nil),                      // ".\u{301}" is one grapheme, still a dotfile
        ("/index.html%00%CC%81", nil),             // NUL in a grapheme with a combining mark
    ]

    @Test func pathTable() {
        for (path, expected) in Self.table {
            let got = files.resolve(path)
            if let expected {
                #expect(got == StaticFiles.realPath(base + "/Public/" + expected), "\(path)")
            } else {
                #expect(got == nil, "\(path) must not be served")
            }
        }
    }

    @Test func contentTypes() {
        #expect(StaticFiles.contentType("x/index.html") == "text/html; charset=utf-8")
        #expect(StaticFiles.contentType("app.js") == "text/javascript; charset=utf-8")
        #expect(StaticFiles.contentType("openapi.yaml") == "application/yaml")
        #expect(StaticFiles.contentType("blob") == "application/octet-stream")
    }
}
