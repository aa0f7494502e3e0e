import Foundation
import HTTPServer
import JPEG
import Testing
@testable import ViewfinderApp
import Session

/// Session calls over HTTP, and the contract's error shapes: a rejected request changes nothing.
@Suite struct SessionAPITests {
    func state(_ port: Int) async throws -> [String: Any] {
        try #require(try await fetch(port, "/api/session").json as? [String: Any])
    }

    /// A JSON value as sorted-key text, so two decodings compare regardless of key order.
    func canonical(_ value: Any?) -> String {
        guard let value, let data = try? JSONSerialization.data(withJSONObject: ["v": value], options: [.sortedKeys]) else { return "nil" }
        return String(decoding: data, as: UTF8.self)
    }

    func errorCode(_ r: TestConnection) -> String? {
        (r.json as? [String: [String: Any]])?["error"]?["code"] as? String
    }

    @Test func sessionStateHasTheContractShape() async throws {
        try await withServer { _, port in
            let s = try await state(port)
            for key in ["state", "online", "camera", "format", "preset", "zoom", "focus", "exposure",
                        "whiteBalance", "torch", "orientation", "stream", "frames", "error"] {
                #expect(s.keys.contains(key), "missing \(key)")
            }
            #expect(s["state"] as? String == "running" && s["online"] as? Bool == true)
            #expect((s["format"] as? [String: Any])?["width"] as? Int == 352)
        }
    }

    @Test func camerasListBothSyntheticCameras() async throws {
        try await withServer { _, port in
            let r = try await fetch(port, "/api/cameras")
            let cams = try #require((r.json as? [String: Any])?["cameras"] as? [[String: Any]])
            #expect(cams.map { $0["id"] as? String } == ["rear", "front"])
            #expect(cams.allSatisfy { $0["kind"] as? String == "synthetic" && $0["device"] is NSNull })
            #expect(cams.allSatisfy { ($0["capabilities"] as? [String: Any])?["torch"] as? Bool == true })
        }
    }

    @Test func startAndStopAreIdempotent() async throws {
        try await withServer { _, port in
            for _ in 0..<2 {
                let r = try await fetch(port, "POST", "/api/session/stop")
                #expect(r.status == 200 && (r.json as? [String: Any])?["state"] as? String == "idle")
            }
            let snap = try await fetch(port, "/snapshot")
            #expect(snap.status == 200 && snap.headers["x-viewfinder-online"] == "false")
            for _ in 0..<2 {
                let r = try await fetch(port, "POST", "/api/session/start")
                #expect(r.status == 200 && (r.json as? [String: Any])?["state"] as? String == "running")
            }
            #expect(try await fetch(port, "/snapshot").headers["x-viewfinder-online"] == "true")
        }
    }

    /// A photo asked for while a prepare or switch replaces the pipeline is taken from the
    /// new one (the soak found these answered 504 within milliseconds).
    @Test func aCaptureDuringAPrepareOrSwitchIsAPhoto() async throws {
        try await withServer { _, port in
            for (i, call) in ["prepare", "switch", "prepare", "switch"].enumerated() {
                let body = call == "switch" ? "{}" : (i == 0 ? #"{"preset": "352x288"}"# : #"{"preset": "640x480"}"#)
                async let photo = fetch(port, "POST", "/api/session/capture")
                async let change = fetch(port, "POST", "/api/session/\(call)", body: body)
                let (p, c) = try await (photo, change)
                #expect(c.status == 200, "\(call): \(c.text)")
                #expect(p.status == 200 && p.headers["content-type"] == "image/jpeg", "capture beside \(call): \(p.status) \(p.text.prefix(200))")
            }
        }
    }

    @Test func prepareReconfiguresWhileAViewerStaysConnected() async throws {
        try await withServer { _, port in
            let viewer = try TestConnection(port: port)
            try viewer.request("GET", "/stream")
            try await viewer.read { Multipart.parse($0).parts.count >= 1 }
            let r = try await fetch(port, "POST", "/api/session/prepare", body: #"{"preset": "640x480", "fps": 15}"#)
            #expect(r.status == 200)
            let format = (r.json as? [String: Any])?["format"] as? [String: Any]
            #expect(format?["width"] as? Int == 640 && format?["fps"] as? Int == 15)
            try await viewer.read {
                guard let last = Multipart.parse($0).parts.last else { return false }
                return (try? JPEGDecoder.size(of: last.body).width) == 640
            }
            let last = try #require(Multipart.parse(viewer.body).parts.last)
            #expect(try JPEGDecoder.size(of: last.body).width == 640, "same connection, new size")
        }
    }

    @Test func switchShowsTheOtherScene() async throws {
        try await withServer { _, port in
            let r = try await fetch(port, "POST", "/api/session/switch")
            #expect(((r.json as? [String: Any])?["camera"] as? [String: Any])?["id"] as? String == "front")
            let seq = ((r.json as? [String: Any])?["frames"] as? [String: Any])?["sequence"] as? Int ?? 0
            // A frame after the switch: the face's skin tone in the middle.
            var image: RGBImage?
            _ = try await eventually {
                let snap = try await fetch(port, "/snapshot")
                guard Int(snap.headers["x-frame-sequence"] ?? "") ?? 0 > seq + 1 else { return false }
                image = try JPEGDecoder.decodeRGB(snap.body)
                return true
            }
            let face = try #require(image).mean(x: 166, y: 130, width: 20, height: 10)
            #expect(face.r > 190 && face.r > face.b + 50, "front camera shows the person: \(face)")
            let back = try await fetch(port, "POST", "/api/session/switch", body: #"{"camera": "rear"}"#)
            #expect(((back.json as? [String: Any])?["camera"] as? [String: Any])?["id"] as? String == "rear")
        }
    }

    /// Every invalid-input class: the documented status and code, and the state unchanged.
    static let invalid: [(path: String, body: String, status: Int, code: String)] = [
        ("/api/session/prepare", "{", 400, "invalid_json"),
        ("/api/session/prepare", "[1]", 400, "invalid_json"),
        ("/api/session/prepare", #"{"fps": "fast"}"#, 400, "invalid_value"),
        ("/api/session/prepare", #"{"fps": NaN}"#, 400, "invalid_json"),
        ("/api/session/prepare", #"{"fps": Infinity}"#, 400, "invalid_json"),
        ("/api/session/prepare", #"{"fps": 1e999}"#, 400, "invalid_json"),
        ("/api/session/prepare", #"{"presett": "low"}"#, 400, "invalid_value"),
        ("/api/session/prepare", #"{"preset": "huge"}"#, 422, "unsupported"),
        ("/api/session/prepare", #"{"pixelFormat": "H264"}"#, 400, "invalid_value"),
        ("/api/session/prepare", #"{"pixelFormat": "MJPG"}"#, 422, "unsupported"),
        ("/api/session/prepare", #"{"camera": "side"}"#, 404, "unknown_camera"),
        ("/api/session/switch", #"{"camera": "../../etc"}"#, 404, "unknown_camera"),
        ("/api/session/switch", #"{"camera": 1}"#, 400, "invalid_value"),
        ("/api/session/start", #"{"now": true}"#, 400, "invalid_value"),
        ("/api/session/zoom", "", 400, "invalid_value"),
        ("/api/session/zoom", #"{"factor": "2"}"#, 400, "invalid_value"),
        ("/api/session/zoom", #"{"factor": NaN}"#, 400, "invalid_json"),
        ("/api/session/zoom", #"{"factor": 2, "rate": -1}"#, 400, "invalid_value"),
        ("/api/session/zoom", #"{"factor": 2, "speed": 1}"#, 400, "invalid_value"),
        ("/api/session/focus", #"{"mode": "macro"}"#, 422, "unsupported"),
        ("/api/session/focus", #"{"mode": "continuous", "lensPosition": 0.2}"#, 400, "invalid_value"),
        ("/api/session/focus", #"{"mode": "auto", "point": {"x": 0.5}}"#, 400, "invalid_value"),
        ("/api/session/exposure", #"{"mode": "sports"}"#, 422, "unsupported"),
        ("/api/session/exposure", #"{"mode": "continuous", "duration": 0.01}"#, 400, "invalid_value"),
        ("/api/session/exposure", #"{"mode": "custom", "iso": true}"#, 400, "invalid_value"),
        ("/api/session/white-balance", #"{}"#, 400, "invalid_value"),
        ("/api/session/white-balance", #"{"mode": "continuous", "temperature": 4000}"#, 400, "invalid_value"),
        ("/api/session/torch", #"{"mode": "strobe"}"#, 400, "invalid_value"),
        ("/api/session/torch", #"{"level": 1}"#, 400, "invalid_value"),
        ("/api/session/orientation", #"{"rotation": 45}"#, 400, "invalid_value"),
        ("/api/session/orientation", #"{"rotation": 90, "mirrored": "no"}"#, 400, "invalid_value"),
        // Fixed ranges are refused, not clamped (the schema's minimum and maximum).
        ("/api/session/torch", #"{"mode": "on", "level": 2}"#, 400, "invalid_value"),
        ("/api/session/focus", #"{"lensPosition": 1.5}"#, 400, "invalid_value"),
        ("/api/session/focus", #"{"mode": "auto", "point": {"x": -0.1, "y": 0.5}}"#, 400, "invalid_value"),
        ("/api/session/exposure", #"{"point": {"x": 0.5, "y": 1.01}}"#, 400, "invalid_value"),
        // A request's null is a wrong type, not "absent".
        ("/api/session/orientation", #"{"rotation": 90, "mirrored": null}"#, 400, "invalid_value"),
        ("/api/session/zoom", #"{"factor": 2, "rate": null}"#, 400, "invalid_value"),
        ("/api/session/switch", #"{"camera": null}"#, 400, "invalid_value"),
        ("/api/session/capture", #"{"store": null}"#, 400, "invalid_value"),
        ("/api/session/controls", #"{"brightness": 2147483648}"#, 400, "invalid_value"),
        ("/api/session/prepare", #"{"preset": "huge", "width": 640, "height": 480}"#, 422, "unsupported"),
    ]

    @Test func invalidInputChangesNothing() async throws {
        try await withServer { _, port in
            // A static baseline: continuous loops would otherwise move the lens and exposure
            // between the two reads whatever the requests did.
            for (call, body) in [("focus", #"{"mode": "locked", "lensPosition": 0.5}"#),
                                 ("exposure", #"{"mode": "custom", "duration": 0.01, "iso": 200}"#),
                                 ("white-balance", #"{"temperature": 5000}"#)] {
                #expect(try await fetch(port, "POST", "/api/session/\(call)", body: body).status == 200)
            }
            let before = try await fetch(port, "/api/session").json as? [String: Any]
            for (path, body, status, code) in Self.invalid {
                let r = try await fetch(port, "POST", path, body: body)
                #expect(r.status == status, "\(path) \(body)")
                #expect(errorCode(r) == code, "\(path) \(body): \(r.text)")
                #expect(r.headers["content-type"] == "application/json")
            }
            let after = try await fetch(port, "/api/session").json as? [String: Any]
            for key in ["state", "camera", "format", "preset", "zoom", "focus", "exposure", "whiteBalance", "torch", "orientation"] {
                #expect(canonical(before?[key]) == canonical(after?[key]), "\(key) changed")
            }
        }
    }

    @Test func unsupportedListsWhatIsSupported() async throws {
        try await withServer { _, port in
            let r = try await fetch(port, "POST", "/api/session/prepare", body: #"{"preset": "huge"}"#)
            let supported = (r.json as? [String: [String: Any]])?["error"]?["supported"] as? [String]
            #expect(supported?.contains("1280x720") == true)
        }
    }

    @Test func oversizedBodyIs413() async throws {
        try await withServer { _, port in
            let big = "{\"camera\": \"" + String(repeating: "x", count: 200_000) + "\"}"
            let r = try await fetch(port, "POST", "/api/session/switch", body: big)
            #expect(r.status == 413 && errorCode(r) == "body_too_large")
            // Chunked upload without a Content-Length is capped as it arrives.
            let c = try TestConnection(port: port)
            try c.send("POST /api/session/switch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
            let chunk = String(repeating: "y", count: 32 * 1024)
            for _ in 0..<3 { try? c.send(String(chunk.utf8.count, radix: 16) + "\r\n" + chunk + "\r\n") }
            try? c.send("0\r\n\r\n")
            try await c.readAll()
            #expect(c.status == 413)
            #expect(try await fetch(port, "/healthz").status == 200, "still serving")
        }
    }

    @Test func unknownRoutesAndMethods() async throws {
        try await withServer { _, port in
            let r = try await fetch(port, "/api/nope")
            #expect(r.status == 404 && errorCode(r) == "not_found")
            let m = try await fetch(port, "DELETE", "/api/session")
            #expect(m.status == 405 && errorCode(m) == "method_not_allowed")
            #expect(m.headers["allow"] == "GET, HEAD, OPTIONS")
            let g = try await fetch(port, "GET", "/api/session/start")
            #expect(g.status == 405 && g.headers["allow"] == "POST, OPTIONS")
        }
    }
}
