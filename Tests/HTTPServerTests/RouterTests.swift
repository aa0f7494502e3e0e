import Testing
@testable import HTTPServer

@Suite struct RouterTests {
    static func router() -> Router {
        var r = Router()
        r.get("/api/session") { _ in .text("session") }
        r.post("/api/session/zoom") { _ in .text("zoom") }
        r.get("/api/photos/:id") { req in .text("photo \(req.parameters["id"] ?? "")") }
        r.delete("/api/photos/:id") { _ in .text("deleted") }
        return r
    }

    @Test func matchesMethodAndPath() {
        guard case .found(_, let params) = Self.router().match(method: "GET", path: "/api/session") else {
            Issue.record("GET /api/session did not match"); return
        }
        #expect(params.isEmpty)
    }

    @Test func capturesParameters() {
        guard case .found(_, let params) = Self.router().match(method: "DELETE", path: "/api/photos/abc-123") else {
            Issue.record("no match"); return
        }
        #expect(params == ["id": "abc-123"])
    }

    @Test func headUsesTheGetRoute() {
        guard case .found = Self.router().match(method: "HEAD", path: "/api/session") else {
            Issue.record("HEAD should match GET"); return
        }
    }

    @Test func wrongMethodIs405WithAllow() {
        guard case .methodNotAllowed(let allow) = Self.router().match(method: "PUT", path: "/api/photos/x") else {
            Issue.record("expected 405"); return
        }
        #expect(allow == ["GET", "DELETE", "HEAD", "OPTIONS"])
    }

    @Test func postOnlyRouteDoesNotImplyHead() {
        guard case .methodNotAllowed(let allow) = Self.router().match(method: "GET", path: "/api/session/zoom") else {
            Issue.record("expected 405"); return
        }
        #expect(allow == ["POST", "OPTIONS"])
    }

    @Test(arguments: ["/nope", "/api", "/api/session/zoom/extra", "/api/photos"])
    func unknownPathsAre404(_ path: String) {
        guard case .notFound = Self.router().match(method: "GET", path: path) else {
            Issue.record("\(path) should be 404"); return
        }
    }

    /// A "/" is a separator even where a grapheme cluster holds it (U+0600 prepends itself to
    /// the next scalar): found by Fuzz/FuzzRouter.
    @Test func slashInsideAGraphemeStillSeparates() {
        guard case .notFound = Self.router().match(method: "GET", path: "/api/photos/x\u{600}/y") else {
            Issue.record("an id spanning two segments"); return
        }
        guard case .found(_, let params) = Self.router().match(method: "GET", path: "/api/photos/x\u{600}") else {
            Issue.record("no match"); return
        }
        #expect(params == ["id": "x\u{600}"])
    }

    @Test func trailingAndDoubleSlashesAreTolerated() {
        guard case .found = Self.router().match(method: "GET", path: "//api//session/") else {
            Issue.record("no match"); return
        }
    }
}
