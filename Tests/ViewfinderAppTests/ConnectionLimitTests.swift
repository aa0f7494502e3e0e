import CaptureTestSupport
import Foundation
@testable import HTTPServer
import Testing
@testable import ViewfinderApp
import Session

/// One client cannot starve the others: the per-address limit and the header timeout,
/// with clients on loopback aliases (127.0.0.0/8 is all loopback on Linux).
@Suite struct ConnectionLimitTests {
    /// Half-open connections (a partial request line, never finished) from 127.0.0.3: the
    /// first 100 are fresh and accepted, as a burst of viewers would be; once they have stalled
    /// past a second, every further one from that address is closed at accept. A snapshot
    /// from 127.0.0.4 is not delayed, and the server closes every half-open connection within
    /// the header timeout (plus slack).
    @Test func slowlorisDoesNotStarveOthers() async throws {
        let headerTimeout = 3
        try await withServer({ $0.server.headerTimeout = headerTimeout }) { app, port in
            #expect(try await fetch(port, "/snapshot").status == 200)  // warm: a frame is there
            var idle: [TestConnection] = []
            let opened = Date()
            for _ in 0..<100 {
                let c = try TestConnection(port: port, from: "127.0.0.3")
                try c.send("GET /snapshot HT")
                idle.append(c)
            }
            #expect(await eventually { app.server?.connectionCount == 100 }, "fresh connections are let in")
            // The property under test is their age: past `stallAfter` they count against the address.
            try await Task.sleep(nanoseconds: UInt64((AddressLimits.stallAfter + 0.3) * 1e9))
            var late: [TestConnection] = []
            for _ in 0..<200 {
                let c = try TestConnection(port: port, from: "127.0.0.3")
                try? c.send("GET /snapshot HT")  // may fail: the server closes at once
                late.append(c)
            }
            let start = Date()
            let snap = try await get(port, "/snapshot", from: "127.0.0.4")
            let elapsed = Date().timeIntervalSince(start)
            #expect(snap.status == 200 && snap.headers["content-type"] == "image/jpeg")
            #expect(elapsed < 1, "snapshot took \(elapsed) s")
            let refused = try await offload { late.filter { (try? $0.closedByPeerSync(timeout: 2)) == true && $0.status == 0 }.count }
            #expect(refused == 200, "\(refused) of 200 closed at accept once the address had 100 stalled")

            // Every half-open connection is closed by the server, none later than the timeout + slack.
            let all = idle
            let closed = try await offload { () -> Int in
                let deadline = opened.addingTimeInterval(Double(headerTimeout) + 3)
                var n = 0
                for c in all where try c.closedByPeerSync(timeout: max(0, deadline.timeIntervalSinceNow)) { n += 1 }
                return n
            }
            #expect(closed == 100, "\(closed) of 100 closed by the server")
            #expect(Date().timeIntervalSince(opened) < Double(headerTimeout) + 3)
            #expect(await eventually(timeout: TestTime.patience) { app.server?.connectionCount == 0 })
        }
    }

    @Test func configReadsTheLimits() throws {
        let c = try ViewfinderApp.Configuration.parse(Array(#"{"server": {"maxConnectionsPerAddress": 4, "headerTimeout": 3}}"#.utf8))
        #expect(c.server.maxConnectionsPerAddress == 4 && c.server.headerTimeout == 3)
        #expect(ViewfinderApp.Configuration().server.maxConnectionsPerAddress == 32)
        #expect(ViewfinderApp.Configuration().server.headerTimeout == 10)
        for (json, message) in [(#"{"server": {"headerTimeout": 0}}"#, "server.headerTimeout: 0 is outside 1…3600"),
                                (#"{"server": {"maxConnectionsPerAddress": "many"}}"#, "server.maxConnectionsPerAddress: expected a number, found a string")] {
            #expect(throws: ViewfinderApp.Configuration.Error(description: message)) { try ViewfinderApp.Configuration.parse(Array(json.utf8)) }
        }
    }

    /// With 32 connections open from one address, its 33rd gets 503 (JSON, and the
    /// connection closes) while another address is served; far beyond the limit
    /// connections are closed at accept without an answer.
    @Test func perAddressLimitAnswers503() async throws {
        try await withServer { app, port in
            #expect(app.configuration.server.maxConnectionsPerAddress == 32)
            var held: [TestConnection] = []
            for _ in 0..<32 { held.append(try TestConnection(port: port, from: "127.0.0.5")) }
            #expect(await eventually { app.server?.connectionCount == 32 })
            // Fresh connections do not count yet (a burst of viewers): these have stalled once
            // `stallAfter` has passed without a request.
            try await Task.sleep(nanoseconds: UInt64((AddressLimits.stallAfter + 0.3) * 1e9))

            let over = try await offload { () -> TestConnection in
                let c = try TestConnection(port: port, from: "127.0.0.5")
                try c.request("GET", "/healthz")
                try c.readAllSync()
                return c
            }
            #expect(over.status == 503)
            let error = (over.json as? [String: [String: String]])?["error"]
            #expect(error?["code"] == "camera_unavailable")
            #expect(error?["message"]?.contains("from this address (limit 32)") == true, "\(error ?? [:])")
            #expect(try await over.closedByPeer(timeout: TestTime.patience), "the 503 closes its connection")

            let other = try await offload { () -> TestConnection in
                let c = try TestConnection(port: port, from: "127.0.0.6")
                try c.request("GET", "/healthz", headers: ["Connection": "close"])
                try c.readAllSync()
                return c
            }
            #expect(other.status == 200, "another address is served")

            // 32 held + 8 answered; the next from the same address is closed at accept.
            for _ in 0..<8 { held.append(try TestConnection(port: port, from: "127.0.0.5")) }
            #expect(await eventually { app.server?.connectionCount == 40 })
            try await Task.sleep(nanoseconds: UInt64((AddressLimits.stallAfter + 0.3) * 1e9))
            let refused = try TestConnection(port: port, from: "127.0.0.5")
            try? refused.request("GET", "/healthz")
            #expect(try await refused.closedByPeer(timeout: TestTime.patience) && refused.status == 0, "closed without an answer")
            held.removeAll()
            #expect(await eventually { app.server?.connectionCount == 0 })
        }
    }

    /// Running streams and SSE are suspended connections, which have no timeout: they
    /// outlive the header timeout, and so does a stream whose client reads.
    @Test func streamsOutliveTheHeaderTimeout() async throws {
        try await withServer({ $0.server.headerTimeout = 1 }) { _, port in
            let stream = try TestConnection(port: port), events = try TestConnection(port: port)
            try stream.request("GET", "/stream")
            try events.request("GET", "/api/events")
            try await stream.read { Multipart.parse($0).parts.count >= 1 }
            try await events.read { String(decoding: $0, as: UTF8.self).contains("\n\n") }
            _ = try await fetch(port, "POST", "/api/session/stop")  // nothing changes now: 1 frame/s
            try await Task.sleep(nanoseconds: 3_000_000_000)
            let parts = Multipart.parse(stream.body).parts.count
            try await stream.read(timeout: TestTime.patience) { Multipart.parse($0).parts.count >= parts + 2 }
            #expect(!stream.eof && Multipart.parse(stream.body).parts.count >= parts + 2, "the stream runs past 3 header timeouts")
            let seen = events.text.components(separatedBy: "event: state").count
            _ = try await fetch(port, "POST", "/api/session/start")
            try await events.read(timeout: TestTime.patience) { String(decoding: $0, as: UTF8.self).components(separatedBy: "event: state").count > seen }
            #expect(!events.eof && events.text.components(separatedBy: "event: state").count > seen,
                    "the idle event stream still delivers")
        }
    }

    /// The per-address limit counts connections stalled before their request, not viewers:
    /// 500 viewers opening /stream at once from one address (a school behind one NAT address)
    /// all get frames with the default limit of 32, and an API call from that address is
    /// still answered.
    @Test func viewersFromOneAddressAreNotLimited() async throws {
        try await withServer { app, port in
            #expect(app.configuration.server.maxConnectionsPerAddress == 32)
            var viewers: [TestConnection] = []
            for _ in 0..<500 {
                let c = try TestConnection(port: port, from: "127.0.0.8")
                try c.request("GET", "/stream")
                viewers.append(c)
            }
            for c in viewers { try await c.read(timeout: TestTime.patience) { Multipart.parse($0).parts.count >= 1 } }
            #expect(viewers.allSatisfy { $0.status == 200 }, "\(viewers.map(\.status).filter { $0 != 200 })")
            let api = try await get(port, "/api/session", from: "127.0.0.8")
            #expect(api.status == 200, "the operator's call from the viewers' address")
            #expect(app.server!.connectionCount >= 500)
            viewers.removeAll()
            #expect(await eventually(timeout: TestTime.patience) { app.server?.connectionCount == 0 })
        }
    }

    /// A nearly full server keeps its last eighth for addresses under their share: one address
    /// taking every slot it can is answered 503 from the 57th of 64, another is still served.
    @Test func aNearlyFullServerKeepsRoomForOthers() async throws {
        try await withServer({ $0.server.maxConnections = 64 }) { app, port in
            var held: [TestConnection] = []
            var refused: TestConnection?
            for _ in 0..<64 {
                let c = try TestConnection(port: port, from: "127.0.0.9")
                try? c.request("GET", "/api/events")
                try? await c.read(timeout: TestTime.patience) { !$0.isEmpty }
                if c.status != 200 { refused = c; break }
                held.append(c)
            }
            #expect(held.count == 56, "served before the reserve: \(held.count)")
            // Closed at accept (the address is over its share of a nearly full server), or, had
            // it slipped in before the count moved, answered 503 naming its share.
            let error = (refused?.json as? [String: [String: String]])?["error"]
            #expect(refused?.status == 0 || (refused?.status == 503 && error?["message"]?.contains("its share") == true),
                    "\(refused?.status ?? -1) \(error ?? [:])")
            let other = try await get(port, "/healthz", from: "127.0.0.10")
            #expect(other.status == 200, "another address is served from the reserve")
            held.removeAll()
            _ = app
        }
    }

    /// A trusted reverse proxy stands for many clients: its idle connections are not limited
    /// per address (the proxy buffers heads itself); an untrusted address still is.
    @Test func aTrustedProxyIsNotLimitedPerAddress() async throws {
        try await withServer({ $0.server.trustedProxies = ["127.0.0.11"] }) { app, port in
            var held: [TestConnection] = []
            for _ in 0..<40 { held.append(try TestConnection(port: port, from: "127.0.0.11")) }
            #expect(await eventually { app.server?.connectionCount == 40 })
            let through = try await get(port, "/healthz", from: "127.0.0.11")
            #expect(through.status == 200)
            held.removeAll()
        }
    }

    /// GET `path` from the loopback alias `address`, the connection closed after the answer.
    private func get(_ port: Int, _ path: String, from address: String) async throws -> TestConnection {
        try await offload { () -> TestConnection in
            let c = try TestConnection(port: port, from: address)
            try c.request("GET", path, headers: ["Connection": "close"])
            try c.readAllSync(timeout: TestTime.patience)
            return c
        }
    }
}
