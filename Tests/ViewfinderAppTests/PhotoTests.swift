import Foundation
import HTTPServer
import JPEG
import Testing
@testable import ViewfinderApp

/// The photo output: stored atomically before the answer, listed, served, deleted; ids can
/// never name a file outside the store.
@Suite struct PhotoTests {
    @Test func storeListGetDelete() async throws {
        try await withServer { app, port in
            let events = try TestConnection(port: port)
            try events.request("GET", "/api/events")
            try await events.read { String(decoding: $0, as: UTF8.self).contains("\n\n") }

            let r = try await fetch(port, "POST", "/api/session/capture", body: #"{"store": true}"#)
            #expect(r.status == 201)
            let info = try #require(r.json as? [String: Any])
            let id = try #require(info["id"] as? String)
            #expect(r.headers["location"] == "/api/photos/\(id)")
            #expect(info["url"] as? String == "/api/photos/\(id)")
            #expect(info["width"] as? Int == 352 && info["height"] as? Int == 288)
            // On disk, whole, before the answer was sent; no temp file left behind.
            let dir = app.configuration.capture.directory
            let file = try #require(FileManager.default.contents(atPath: "\(dir)/\(id).jpg"))
            #expect(file.count == info["bytes"] as? Int)
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["\(id).jpg"])

            try await events.read { String(decoding: $0, as: UTF8.self).contains("event: photo") }
            #expect(events.text.contains("event: photo\ndata: {") && events.text.contains(id))

            let second = try await fetch(port, "POST", "/api/session/capture?store=true")
            let id2 = try #require((second.json as? [String: Any])?["id"] as? String)
            let list = try #require((try await fetch(port, "/api/photos").json as? [String: Any])?["photos"] as? [[String: Any]])
            #expect(list.map { $0["id"] as? String } == [id2, id], "newest first")

            let got = try await fetch(port, "/api/photos/\(id)")
            #expect(got.status == 200 && got.headers["content-type"] == "image/jpeg" && got.body == [UInt8](file))

            let del = try await fetch(port, "DELETE", "/api/photos/\(id)")
            #expect(del.status == 204)
            let gone = try await fetch(port, "/api/photos/\(id)")
            #expect(gone.status == 404)
            #expect((gone.json as? [String: [String: Any]])?["error"]?["code"] as? String == "unknown_photo")
            #expect(try await fetch(port, "DELETE", "/api/photos/\(id)").status == 404)
        }
    }

    @Test(arguments: ["..%2F..%2Fconfig.json", "%2e%2e", "1-2%2F..", "abc", "1-2-3", "1", "-1", "1-",
                      "12345678901234567890123-1", "1-2.jpg", "%00"])
    func idsCannotEscapeTheStore(_ id: String) async throws {
        try await withServer { _, port in
            for method in ["GET", "DELETE"] {
                let r = try await fetch(port, method, "/api/photos/\(id)")
                #expect(r.status == 404, "\(method) \(id)")
                #expect((r.json as? [String: [String: Any]])?["error"]?["code"] as? String == "unknown_photo")
            }
        }
    }

    @Test func badCaptureOptionsAre400() async throws {
        try await withServer { app, port in
            for (path, body) in [("/api/session/capture?quality=0", ""), ("/api/session/capture?quality=x", ""),
                                 ("/api/session/capture?store=maybe", ""), ("/api/session/capture", #"{"quality": 101}"#),
                                 ("/api/session/capture", #"{"store": "yes"}"#), ("/api/session/capture", #"{"flash": true}"#)] {
                let r = try await fetch(port, "POST", path, body: body.isEmpty ? nil : body)
                #expect(r.status == 400, "\(path) \(body)")
            }
            #expect(!FileManager.default.fileExists(atPath: app.configuration.capture.directory), "nothing stored")
        }
    }
}
