// A minimal HTTP/1.1 client over a POSIX socket for live tests: every read has a deadline,
// chunked bodies are decoded incrementally so endless streams can be inspected.

import CaptureTestSupport
import Foundation
import SystemSupport

struct TestError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

final class TestConnection: @unchecked Sendable {
    private let fd: Int32
    private var raw: [UInt8] = []
    private(set) var status = 0
    private(set) var headers: [String: String] = [:]
    /// Body bytes decoded so far (chunking removed).
    private(set) var body: [UInt8] = []
    private var chunked = false
    private var chunkRemaining = 0
    private(set) var eof = false

    /// `source` binds the client side to a loopback alias (127.0.0.0/8 is all loopback).
    init(port: Int, from source: String? = nil) throws {
        fd = try loopbackSocket(port: port, from: source)
    }

    deinit { close(fd) }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestError("send: errno \(errno)") }
            off += n
        }
    }

    func request(_ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8] = []) throws {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        try send(Array((head + "\r\n").utf8) + body)
    }

    /// Reads once (waiting up to the deadline); false at EOF or timeout.
    @discardableResult
    private func pump(until deadline: Date) throws -> Bool {
        let ms = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, ms) > 0 else { return false }
        var buf = [UInt8](repeating: 0, count: 256 * 1024)
        let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { eof = true; return false }
        raw.append(contentsOf: buf[0..<n])
        decode()
        return true
    }

    private func decode() {
        if status == 0 {
            guard let end = find([13, 10, 13, 10], in: raw) else { return }
            let lines = String(decoding: raw[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
            status = Int(lines[0].split(separator: " ")[1]) ?? -1
            for line in lines.dropFirst() {
                guard let c = line.firstIndex(of: ":") else { continue }
                headers[line[..<c].lowercased()] = line[line.index(after: c)...].trimmingCharacters(in: .whitespaces)
            }
            chunked = headers["transfer-encoding"]?.lowercased() == "chunked"
            raw.removeFirst(end + 4)
        }
        guard chunked else { body += raw; raw.removeAll(); return }
        while true {
            if chunkRemaining > 0 {
                let n = min(chunkRemaining, raw.count)
                body += raw[0..<n]
                raw.removeFirst(n)
                chunkRemaining -= n
                if chunkRemaining > 0 { return }
                chunkRemaining = -2  // expect CRLF
            }
            if chunkRemaining == -2 {
                guard raw.count >= 2 else { return }
                raw.removeFirst(2)
                chunkRemaining = 0
            }
            guard let lineEnd = find([13, 10], in: raw) else { return }
            let size = Int(String(decoding: raw[0..<lineEnd], as: UTF8.self).split(separator: ";")[0], radix: 16) ?? 0
            raw.removeFirst(lineEnd + 2)
            if size == 0 { eof = true; return }
            chunkRemaining = size
        }
    }

    func readHeadSync(timeout: Double = TestTime.patience) throws {
        let deadline = TestTime.deadline(timeout)
        while status == 0 {
            guard try pump(until: deadline) || status != 0 else {
                throw TestError(eof ? "connection closed before the response head" : "no response head in \(timeout * TestTime.scale) s")
            }
        }
    }

    /// Reads until `done(body)` holds, EOF, or the timeout.
    func readSync(timeout: Double = TestTime.patience, until done: ([UInt8]) -> Bool) throws {
        let deadline = TestTime.deadline(timeout)
        try readHeadSync(timeout: timeout)
        while !done(body) && !eof && Date() < deadline { try pump(until: deadline) }
    }

    /// Reads a whole Content-Length or chunked body.
    func readAllSync(timeout: Double = TestTime.patience) throws {
        try readSync(timeout: timeout) { [self] b in
            if let n = headers["content-length"].flatMap(Int.init) { return b.count >= n }
            return false
        }
    }

    // Async faces of the blocking reads: they run on their own thread, never on Swift's
    // cooperative pool, which the in-process server's handlers need (2 threads here).
    func readHead(timeout: Double = TestTime.patience) async throws { try await offload { try self.readHeadSync(timeout: timeout) } }
    func read(timeout: Double = TestTime.patience, until done: @escaping @Sendable ([UInt8]) -> Bool) async throws {
        try await offload { try self.readSync(timeout: timeout, until: done) }
    }
    func readAll(timeout: Double = TestTime.patience) async throws { try await offload { try self.readAllSync(timeout: timeout) } }
    func closedByPeer(timeout: Double) async throws -> Bool { try await offload { try self.closedByPeerSync(timeout: timeout) } }

    var text: String { String(decoding: body, as: UTF8.self) }
    var json: Any? { try? JSONSerialization.jsonObject(with: Data(body)) }

    /// Closes the write side and waits for the server to close (bounded).
    func closedByPeerSync(timeout: Double) throws -> Bool {
        let deadline = TestTime.deadline(timeout)
        while !eof && Date() < deadline { try pump(until: deadline) }
        return eof
    }
}

func find(_ needle: [UInt8], in hay: [UInt8], from: Int = 0) -> Int? {
    guard hay.count >= needle.count, from <= hay.count - needle.count else { return nil }
    for i in from...(hay.count - needle.count) where hay[i] == needle[0] && Array(hay[i..<(i + needle.count)]) == needle {
        return i
    }
    return nil
}

/// One request, whole response.
func fetch(_ port: Int, _ path: String, headers: [String: String] = [:]) async throws -> TestConnection {
    try await fetch(port, "GET", path, headers: headers)
}

func fetch(_ port: Int, _ method: String, _ path: String, body: String? = nil,
           headers: [String: String] = [:]) async throws -> TestConnection {
    try await offload { try fetchSync(port, method, path, body: body, headers: headers) }
}

func fetchSync(_ port: Int, _ method: String, _ path: String, body: String? = nil,
               headers: [String: String] = [:]) throws -> TestConnection {
    let c = try TestConnection(port: port)
    var h = headers
    if body != nil { h["Content-Type"] = "application/json" }
    try c.request(method, path, headers: h.merging(["Connection": "close"]) { a, _ in a }, body: Array((body ?? "").utf8))
    if method == "HEAD" { try c.readHeadSync() } else { try c.readAllSync() }
    return c
}

/// Waits for a condition that follows an event we cannot await directly (a socket closing
/// on the other side): polls every 20 ms, up to `timeout` (stretched by TestTime.scale).
func eventually(timeout: Double = TestTime.patience, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = TestTime.deadline(timeout)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(nanoseconds: 20_000_000)
    }
    return try await condition()
}

/// A TCP socket connected to 127.0.0.1:`port` (bound first to `source`, a loopback alias, when given).
func loopbackSocket(port: Int, from source: String? = nil) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestError("socket: errno \(errno)") }
    do {
        if let source { try IPv4SocketAddress(source, port: 0).bind(fd) }
        try IPv4SocketAddress.loopback(port: UInt16(port)).connect(fd)
    } catch {
        close(fd)
        throw error
    }
    return fd
}
