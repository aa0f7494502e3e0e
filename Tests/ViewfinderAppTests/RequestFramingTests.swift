import CaptureTestSupport
import Foundation
import Testing
@testable import ViewfinderApp

/// What Tests/fuzz/raw_http.py found: request framing libmicrohttpd leaves to us, and event
/// clients that leave while nothing happens.
@Suite struct RequestFramingTests {
    /// Two Content-Length headers that disagree: libmicrohttpd frames the body by the first,
    /// a proxy in front may use the other (request smuggling). RFC 9112 6.3: 400 and close,
    /// and the call is not made. Equal repeats are allowed.
    @Test func conflictingContentLengthsAre400() async throws {
        try await withServer { _, port in
            let body = #"{"factor":2}"#
            for lengths in [["12", "3"], ["3", "12"]] {
                let c = try TestConnection(port: port)
                try c.send("POST /api/session/zoom HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                           + lengths.map { "Content-Length: \($0)\r\n" }.joined() + "\r\n" + body)
                try await c.readAll(timeout: TestTime.patience)
                #expect(c.status == 400, "Content-Length \(lengths)")
                #expect(try await c.closedByPeer(timeout: TestTime.patience), "the connection is closed after the 400")
            }
            let state = try await fetch(port, "/api/session")
            #expect(((state.json as? [String: Any])?["zoom"] as? [String: Any])?["factor"] as? Double == 1,
                    "the refused calls changed nothing")

            let same = try TestConnection(port: port)
            try same.send("POST /api/session/zoom HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                          + "Content-Length: 12\r\nContent-Length: 12\r\n\r\n" + body)
            try await same.readAll(timeout: TestTime.patience)
            #expect(same.status == 200)
        }
    }

    /// Heads that two parsers could read differently, which libmicrohttpd lets through: 400
    /// naming what is wrong, the connection closed, the call not made.
    @Test func malformedHeadsAre400AndChangeNothing() async throws {
        try await withServer { _, port in
            let body = #"{"factor":2}"#
            let heads: [(String, String)] = [
                ("Host: 127.0.0.1\r\nContent-Length : 12\r\n", "'Content-Length '"),
                ("Host: 127.0.0.1\r\nX Y: 1\r\nContent-Length: 12\r\n", "'X Y' is not a token"),
                ("Host: 127.0.0.1\r\nX-A: 1\r2\r\nContent-Length: 12\r\n", "'X-A' holds a NUL, CR or LF"),
                ("Content-Length: 12\r\n", "needs a Host"),
                ("Host: 127.0.0.1\r\nHost: example.com\r\nContent-Length: 12\r\n", "Host is given 2 times"),
            ]
            for (head, says) in heads {
                let c = try TestConnection(port: port)
                try c.send("POST /api/session/zoom HTTP/1.1\r\nContent-Type: application/json\r\n" + head + "\r\n" + body)
                try await c.readAll(timeout: TestTime.patience)
                let message = ((c.json as? [String: Any])?["error"] as? [String: Any])?["message"] as? String ?? c.text
                #expect(c.status == 400 && message.contains(says), "\(head.debugDescription): \(c.status) \(message)")
                #expect(try await c.closedByPeer(timeout: TestTime.patience), "the connection is closed after the 400")
            }
            let state = try await fetch(port, "/api/session")
            #expect(((state.json as? [String: Any])?["zoom"] as? [String: Any])?["factor"] as? Double == 1,
                    "the refused calls changed nothing")
            // HTTP/1.0 may leave Host out.
            let old = try TestConnection(port: port)
            try old.send("GET /api/session HTTP/1.0\r\n\r\n")
            try await old.readAll(timeout: TestTime.patience)
            #expect(old.status == 200)
        }
    }

    /// A client that waits for "100 Continue" before sending a body over the limit is told
    /// 413 at once and never sends it (it used to get 100 Continue, send 70 KB, then the 413).
    @Test func expectContinueOverTheLimitIs413BeforeTheBody() async throws {
        try await withServer { _, port in
            let c = try TestConnection(port: port)
            try c.send("POST /api/session/zoom HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       + "Expect: 100-continue\r\nContent-Length: 70000\r\n\r\n")
            try await c.readAll(timeout: TestTime.patience)
            let code = ((c.json as? [String: Any])?["error"] as? [String: Any])?["code"] as? String
            #expect(c.status == 413 && code == "body_too_large", "\(c.status) \(c.text)")
            // Within the limit, the interim answer comes and the call is made.
            let ok = try TestConnection(port: port)
            try ok.send("POST /api/session/zoom HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        + "Expect: 100-continue\r\nConnection: close\r\nContent-Length: 12\r\n\r\n")
            try await ok.readHead(timeout: TestTime.patience)
            #expect(ok.status == 100, "100 Continue for a body within the limit")
        }
    }

    /// An idle /api/events client gets a comment every few seconds, and one that went away
    /// while no event came is closed by the server (it used to keep its connection, and its
    /// place under the connection limits, until the next event: on an idle camera, forever).
    @Test func eventClientsGetHeartbeatsAndLeftOnesAreClosed() async throws {
        try await withServer { app, port in
            let server = try #require(app.server)
            let idle = try TestConnection(port: port)
            try idle.request("GET", "/api/events")
            try await idle.read(timeout: TestTime.patience) { String(decoding: $0, as: UTF8.self).contains("\n\n") }
            try await idle.read(timeout: 8) { String(decoding: $0, as: UTF8.self).contains(": keep-alive\n\n") }
            #expect(idle.text.contains(": keep-alive\n\n"), "a heartbeat within 8 s")

            let before = server.connectionCount
            var left: [TestConnection] = []
            for _ in 0..<5 {
                let c = try TestConnection(port: port)
                try c.request("GET", "/api/events")
                try await c.read(timeout: TestTime.patience) { String(decoding: $0, as: UTF8.self).contains("\n\n") }
                left.append(c)
            }
            #expect(server.connectionCount == before + 5)
            left.removeAll()  // the clients close their sockets; no event follows
            let closed = await eventually(timeout: 15) { server.connectionCount == before }
            #expect(closed, "connections \(server.connectionCount), expected \(before) once the clients left")
        }
    }
}
