// libFuzzer target: a raw request line's URL, as libmicrohttpd hands it over, through every
// step that turns it into a route or a file path.
//
// Input: byte 0 picks the method, the rest is the raw URL (path and query, still
// percent-encoded, arbitrary bytes).
//
// Invariants beyond "no crash":
//  - Router.match agrees with a reference matcher written here (split first, decode each
//    segment after, an undecodable segment matches only a parameter), and with
//    allowedMethods: found ⇒ the method is allowed; 405 ⇒ Allow is allowedMethods and lacks
//    the method; 404 ⇒ nothing is allowed.
//  - StaticFiles.resolve never answers a path outside the root, a directory, a dot-file or a
//    file reached through a symlink that leaves the root; over a fixture tree known file by
//    file it answers exactly the files a reference resolver expects (byte-wise, not by
//    Unicode equivalence).
//  - percentDecode: whatever it decodes, re-encoding every byte and decoding gives it back.
//  - A photo or movie id the stores accept names a file directly inside their directory.

import Foundation
import HTTPServer
import Movie
import Session

private let methods = ["GET", "POST", "DELETE", "HEAD", "OPTIONS", "PUT", "PATCH", "get"]

/// The application's routes (Public/openapi.yaml's paths, `{id}` as `:id`).
private let routeTable: [(String, String)] = {
    var t: [(String, String)] = [
        ("GET", "/healthz"), ("GET", "/metrics"), ("GET", "/api/me"), ("GET", "/api/cameras"),
        ("GET", "/api/events"), ("POST", "/api/session/switch"),
        ("GET", "/api/photos"), ("GET", "/api/photos/:id"), ("DELETE", "/api/photos/:id"),
        ("GET", "/api/movies"), ("GET", "/api/movies/:id"), ("DELETE", "/api/movies/:id"),
        ("GET", "/api/cameras/:id/scene"), ("POST", "/api/cameras/:id/scene"),
        ("GET", "/stream"), ("GET", "/snapshot"), ("GET", "/cameras/:id/stream"), ("GET", "/cameras/:id/snapshot"),
        ("GET", "/"),
    ]
    for prefix in ["/api/session", "/api/cameras/:id/session"] {
        t.append(("GET", prefix))
        for p in ["start", "stop", "prepare", "zoom", "focus", "exposure", "white-balance", "torch", "orientation",
                  "controls", "capture", "recording/start", "recording/stop", "recording/frame", "metadata"] {
            t.append(("POST", prefix + "/" + p))
        }
        t.append(("GET", prefix + "/controls"))
    }
    return t
}()

private let router: Router = {
    var r = Router()
    for (m, p) in routeTable {
        let tag = "\(m) \(p)"
        r.add(m, p) { _ in Response(status: 200, contentType: "text/plain", bytes: Array(tag.utf8)) }
    }
    return r
}()

// MARK: - The fixture tree for StaticFiles

/// <tmp>/public is the root; <tmp>/outside.txt, <tmp>/publicx/ and <tmp>/outdir/ lie beside it.
private struct Tree {
    let base: String
    let root: String
    /// Relative path (bytes, no leading slash, normalized) → file it must resolve to (relative to root).
    var serve: [[UInt8]: String] = [:]
}

/// Writes a file, its directories first (split on the byte '/': NSString's path functions work
/// on graphemes, and "odd\u{0600}/" is one).
private func mk(_ path: String, _ text: String = "x") {
    let dir = String(decoding: Array(Array(path.utf8).split(separator: UInt8(ascii: "/")).dropLast()
        .map { Array($0) }.joined(separator: [UInt8(ascii: "/")])), as: UTF8.self)
    try! FileManager.default.createDirectory(atPath: "/" + dir, withIntermediateDirectories: true)
    precondition(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)), "cannot write \(path)")
}

private let treeBase = (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/vf-fuzz-router-\(getpid())"

private let tree: Tree = {
    let base = treeBase
    try? FileManager.default.removeItem(atPath: base)
    let root = base + "/public"
    mk(root + "/index.html"); mk(root + "/app.js"); mk(root + "/sub/index.html"); mk(root + "/sub/a b.txt")
    mk(root + "/\u{00FC}.txt")  // ü, NFC
    mk(root + "/.hidden"); mk(root + "/sub/.env"); mk(root + "/.git/config")
    mk(root + "/odd\u{0600}/.secret")  // a directory whose name ends in a grapheme-prepending scalar
    mk(root + "/odd\u{0600}/plain.txt")
    try! FileManager.default.createDirectory(atPath: root + "/empty", withIntermediateDirectories: true)
    mk(base + "/outside.txt"); mk(base + "/publicx/secret.txt"); mk(base + "/outdir/index.html"); mk(base + "/outdir/f.txt")
    let fm = FileManager.default
    try! fm.createSymbolicLink(atPath: root + "/link-in", withDestinationPath: "app.js")
    try! fm.createSymbolicLink(atPath: root + "/link-out", withDestinationPath: "../outside.txt")
    try! fm.createSymbolicLink(atPath: root + "/dirlink", withDestinationPath: "../outdir")
    try! fm.createSymbolicLink(atPath: root + "/sub/up", withDestinationPath: "..")
    atexit { try? FileManager.default.removeItem(atPath: treeBase) }  // not after a crash: scripts/fuzz sets TMPDIR
    var t = Tree(base: base, root: realpath(root))
    for (k, v) in [("", "index.html"), ("index.html", "index.html"), ("app.js", "app.js"), ("sub", "sub/index.html"),
                   ("sub/index.html", "sub/index.html"), ("sub/a b.txt", "sub/a b.txt"), ("\u{00FC}.txt", "\u{00FC}.txt"),
                   ("link-in", "app.js"), ("sub/up", "index.html"), ("sub/up/app.js", "app.js"),
                   ("sub/up/sub", "sub/index.html"), ("sub/up/sub/a b.txt", "sub/a b.txt"),
                   ("sub/up/index.html", "index.html"), ("sub/up/sub/index.html", "sub/index.html"),
                   ("sub/up/\u{00FC}.txt", "\u{00FC}.txt"), ("sub/up/link-in", "app.js"),
                   ("odd\u{0600}/plain.txt", "odd\u{0600}/plain.txt")] {
        t.serve[Array(k.utf8)] = v
    }
    // sub/up/sub/up/… loops: the reference below folds "sub/up" away.
    return t
}()

private func realpath(_ p: String) -> String {
    guard let r = Glibc.realpath(p, nil) else { fatalError("realpath \(p)") }
    defer { free(r) }
    return String(cString: r)
}

private let files = StaticFiles(directory: tree.root)

/// The reference: the normalized byte path a URL names, or nil when it must be refused.
private func reference(_ decoded: String) -> [UInt8]? {
    let bytes = Array(decoded.utf8)
    if bytes.contains(0) || bytes.contains(UInt8(ascii: "\\")) { return nil }
    var parts: [[UInt8]] = []
    for part in bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
        if part.elementsEqual([UInt8(ascii: ".")]) { continue }
        if part.first == UInt8(ascii: ".") { return nil }
        parts.append(Array(part))
    }
    // sub/up is a symlink to the root: fold every "sub/up" pair (the target is inside).
    var folded: [[UInt8]] = []
    for p in parts {
        if p == Array("up".utf8), folded == [Array("sub".utf8)] { folded = [] } else { folded.append(p) }
    }
    return Array(folded.map { $0 }.joined(separator: [UInt8(ascii: "/")]))
}

private func checkStaticFiles(_ rawPath: String) {
    let got = files.resolve(rawPath)
    if let got {
        // Containment, whatever the URL.
        precondition(got.utf8.starts(with: (tree.root + "/").utf8), "resolved outside the root: \(rawPath.debugDescription) → \(got)")
        precondition(realpath(got) == got, "not a real path: \(got)")
        var isDir: ObjCBool = false
        precondition(FileManager.default.fileExists(atPath: got, isDirectory: &isDir) && !isDir.boolValue, "not a file: \(got)")
        let rel = got.utf8.dropFirst(tree.root.utf8.count + 1)
        for comp in rel.split(separator: UInt8(ascii: "/")) {
            precondition(comp.first != UInt8(ascii: "."), "served a dot-file: \(rawPath.debugDescription) → \(got)")
        }
    }
    // Exactly what the reference expects.
    let expected: String?
    if let decoded = StaticFiles.percentDecode(rawPath), let key = reference(decoded), let rel = tree.serve[key] {
        expected = tree.root + "/" + rel
    } else {
        expected = nil
    }
    precondition(got.map { Array($0.utf8) } == expected.map { Array($0.utf8) },
                 "resolve(\(rawPath.debugDescription)) = \(got.debugDescription), expected \(expected.debugDescription)")
}

// MARK: - Router reference

private func checkRouter(method: String, rawPath: String) {
    // Segments are split on the byte '/', never on a grapheme that merely contains one.
    let parts: [(decoded: String?, raw: String)] = Array(rawPath.utf8).split(separator: UInt8(ascii: "/")).map {
        let raw = String(decoding: $0, as: UTF8.self)
        return (StaticFiles.percentDecode(raw), raw)
    }
    var allowed: [String] = []
    var expectHit: (String, [String: String])?
    for (m, p) in routeTable {
        let pattern = p.split(separator: "/")  // ASCII
        guard pattern.count == parts.count else { continue }
        var params: [String: String] = [:]
        var ok = true
        for (seg, part) in zip(pattern, parts) {
            if seg.hasPrefix(":") {
                params[String(seg.dropFirst())] = part.decoded ?? "\u{0}" + part.raw
            } else if part.decoded.map({ Array($0.utf8) }) != Array(seg.utf8) {
                ok = false; break
            }
        }
        guard ok else { continue }
        allowed.append(m)
        if expectHit == nil && (m == method || (method == "HEAD" && m == "GET")) { expectHit = ("\(m) \(p)", params) }
    }
    var implied: [String] = []
    for m in allowed where !implied.contains(m) { implied.append(m) }
    if implied.contains("GET") && !implied.contains("HEAD") { implied.append("HEAD") }
    if !implied.isEmpty && !implied.contains("OPTIONS") { implied.append("OPTIONS") }

    let allowList = router.allowedMethods(path: rawPath)
    precondition(allowList == implied, "allowedMethods(\(rawPath.debugDescription)) = \(allowList), expected \(implied)")
    switch router.match(method: method, path: rawPath) {
    case .found(_, let parameters):
        guard let (route, params) = expectHit else { preconditionFailure("found a route for \(method) \(rawPath.debugDescription); expected none") }
        precondition(parameters.mapValues { Array($0.utf8) } == params.mapValues { Array($0.utf8) },
                     "\(route): parameters \(parameters.debugDescription), expected \(params.debugDescription)")
        precondition(allowList.contains(method) || (method == "HEAD" && allowList.contains("GET")))
        if let id = parameters["id"] { checkStoredIDs(id) }
    case .methodNotAllowed(let allow):
        precondition(expectHit == nil && !implied.isEmpty, "405 for \(method) \(rawPath.debugDescription)")
        // (OPTIONS is implied, and the server answers it from allowedMethods itself.)
        precondition(allow == implied && (!allow.contains(method) || method == "OPTIONS"),
                     "Allow \(allow) for \(method), expected \(implied)")
    case .notFound:
        precondition(expectHit == nil && implied.isEmpty, "404 for \(method) \(rawPath.debugDescription)")
    }
}

/// An id a store accepts is a plain file name: the file it names lies directly in the store's directory.
private func checkStoredIDs(_ id: String) {
    for valid in [PhotoStore.isValid(id: id), MovieStore.isValid(id: id)] where valid {
        let b = Array(id.utf8)
        precondition(!b.isEmpty && b.first != UInt8(ascii: ".") && !b.contains(UInt8(ascii: "/")) && !b.contains(0)
                     && !b.contains(UInt8(ascii: "\\")), "a store accepts the id \(id.debugDescription)")
    }
    if MovieStore.isValid(id: id) {
        let p = MovieStore(directory: "/m").path(id)
        precondition(p.utf8.split(separator: UInt8(ascii: "/")).count == 2, "movie path \(p.debugDescription)")
    }
}

// MARK: - percentDecode

private func checkPercentDecode(_ s: String) {
    for plus in [false, true] {
        guard let d = StaticFiles.percentDecode(s, plusIsSpace: plus) else { continue }
        let encoded = d.utf8.map { b in "%" + String(b, radix: 16, uppercase: b & 1 == 0).leftPadded() }.joined()
        let again = StaticFiles.percentDecode(encoded, plusIsSpace: plus)
        precondition(again.map { Array($0.utf8) } == Array(d.utf8), "percentDecode round trip of \(s.debugDescription)")
        if !s.utf8.contains(UInt8(ascii: "%")) && !(plus && s.utf8.contains(UInt8(ascii: "+"))) {
            precondition(Array(d.utf8) == Array(s.utf8), "percentDecode changed \(s.debugDescription) without escapes")
        }
    }
}

extension String {
    fileprivate func leftPadded() -> String { count < 2 ? "0" + self : self }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1, size <= 4096 else { return 0 }
    let method = methods[Int(data[0]) % methods.count]
    // libmicrohttpd hands over the URL without its query (cut at the first '?' byte) as a C
    // string: it stops at NUL; String(cString:) repairs bad UTF-8.
    var bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    if let end = bytes.firstIndex(where: { $0 == 0 || $0 == UInt8(ascii: "?") }) { bytes.removeSubrange(end...) }
    let rawPath = String(decoding: bytes, as: UTF8.self)
    checkPercentDecode(rawPath)
    checkRouter(method: method, rawPath: rawPath)
    if method == "GET" || method == "HEAD" { checkStaticFiles(rawPath) }
    return 0
}
