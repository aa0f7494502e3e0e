import CaptureTestSupport
import Foundation
import HTTPServer
import Session
import JPEG
import Testing
@testable import ViewfinderApp

/// Every control's effect, measured in decoded pixels of frames exposed after the call
/// (POST /api/session/capture guarantees that), on the 352x288 synthetic cameras.
@Suite struct SessionControlTests {
    func post(_ port: Int, _ call: String, _ body: String) async throws -> [String: Any] {
        let r = try await fetch(port, "POST", "/api/session/\(call)", body: body)
        #expect(r.status == 200, "\(call) \(body): \(r.text)")
        return try #require(r.json as? [String: Any])
    }

    func photo(_ port: Int) async throws -> RGBImage {
        let r = try await fetch(port, "POST", "/api/session/capture")
        #expect(r.status == 200 && r.headers["content-type"] == "image/jpeg")
        return try JPEGDecoder.decodeRGB(r.body)
    }

    /// A photo once `settled` holds for the state (auto modes converge over frames).
    func photo(_ port: Int, when settled: @escaping ([String: Any]) -> Bool) async throws -> RGBImage {
        let ok = try await eventually { settled(try #require(try await fetch(port, "/api/session").json as? [String: Any])) }
        #expect(ok, "the state settled")
        return try await photo(port)
    }

    func luma(_ i: RGBImage, x: Int = 0, y: Int = 0, w: Int? = nil, h: Int? = nil) -> Double {
        let m = i.mean(x: x, y: y, width: w ?? i.width, height: h ?? i.height)
        return 0.299 * m.r + 0.587 * m.g + 0.114 * m.b
    }

    /// Energy of horizontal luma gradients over the bars band: high when sharp. (Squared:
    /// a blur spreads an edge's step over many pixels, which keeps the sum of absolute
    /// differences but shrinks the sum of squares.)
    func sharpness(_ i: RGBImage) -> Double {
        func y(_ p: (r: Int, g: Int, b: Int)) -> Double { 0.299 * Double(p.r) + 0.587 * Double(p.g) + 0.114 * Double(p.b) }
        var total = 0.0
        for row in stride(from: 10, to: i.height * 2 / 3 - 10, by: 4) {
            for x in 0..<(i.width - 1) {
                let d = y(i.pixel(x: x + 1, y: row)) - y(i.pixel(x: x, y: row))
                total += d * d
            }
        }
        return total
    }

    /// Width of the bar that starts at the frame's centre (the magenta bar at zoom 1).
    func barWidthRightOfCentre(_ i: RGBImage) -> Int {
        let y = i.height / 3, start = i.width / 2 + 2
        let c = i.pixel(x: start, y: y)
        var x = start
        while x < i.width - 1 {
            let p = i.pixel(x: x + 1, y: y)
            if abs(p.r - c.r) + abs(p.g - c.g) + abs(p.b - c.b) > 90 { break }
            x += 1
        }
        return x - i.width / 2 + 1
    }

    @Test func zoomTwoDoublesTheApparentSize() async throws {
        try await withServer { _, port in
            let before = barWidthRightOfCentre(try await photo(port))
            let s = try await post(port, "zoom", #"{"factor": 2}"#)
            #expect((s["zoom"] as? [String: Any])?["factor"] as? Double == 2)
            let image = try await photo(port)
            #expect(image.width == 352 && image.height == 288, "digital zoom keeps the output size")
            let after = barWidthRightOfCentre(image)
            let ratio: Double = Double(after) / Double(before)
            #expect(abs(ratio - 2) < 0.15, "bar \(before) px → \(after) px")
        }
    }

    /// Digital pan: zoomed 4×, the crop about the left edge shows what the whole picture has
    /// in its left quarter, and about the right edge its right quarter; the state says where.
    @Test func theCropFollowsItsCentre() async throws {
        try await withServer { _, port in
            _ = try await fetch(port, "POST", "/api/cameras/rear/scene", body: #"{"moving": false}"#)
            let whole = try await photo(port)
            let (w, h) = (whole.width, whole.height)
            for (x, quarter) in [(0.0, 0), (1.0, 3 * w / 4)] {
                let s = try await post(port, "zoom", #"{"factor": 4, "center": {"x": \#(x), "y": 0.5}}"#)
                #expect(((s["zoom"] as? [String: Any])?["center"] as? [String: Double]) == ["x": x, "y": 0.5])
                let panned = try await photo(port)
                let got = panned.mean(x: 0, y: h / 8, width: w, height: h * 3 / 4)
                let want = whole.mean(x: quarter, y: h * 3 / 8, width: w / 4, height: h / 4)
                let differs = abs(got.r - want.r) + abs(got.g - want.g) + abs(got.b - want.b)
                #expect(differs < 60, "about x=\(x): the panned picture \(got), the whole one's quarter \(want)")
            }
            // Outside the frame: refused, naming it; nothing changes.
            let bad = try await fetch(port, "POST", "/api/session/zoom", body: #"{"factor": 2, "center": {"x": 1.5, "y": 0.5}}"#)
            #expect(bad.status == 400 && bad.text.contains("center"))
            let z = (try await fetch(port, "/api/session").json as? [String: Any])?["zoom"] as? [String: Any]
            #expect(z?["factor"] as? Double == 4 && (z?["center"] as? [String: Double])?["x"] == 1)
        }
    }

    @Test func zoomIsClampedAndRamps() async throws {
        try await withServer { _, port in
            let s = try await post(port, "zoom", #"{"factor": 100}"#)
            #expect((s["zoom"] as? [String: Any])?["factor"] as? Double == 8, "clamped to max")
            _ = try await post(port, "zoom", #"{"factor": 1}"#)
            let ramp = try await post(port, "zoom", #"{"factor": 4, "rate": 2}"#)
            let z = try #require(ramp["zoom"] as? [String: Any])
            #expect(z["ramping"] as? Bool == true && (z["factor"] as? Double ?? 4) < 4)
            let done = try await eventually(timeout: TestTime.patience) {
                let z = (try await fetch(port, "/api/session").json as? [String: Any])?["zoom"] as? [String: Any]
                return z?["factor"] as? Double == 4 && z?["ramping"] as? Bool == false
            }
            #expect(done, "the ramp reaches 4× (two doublings at 2/s: about a second)")
        }
    }

    @Test func customExposureUpMeansBrighter() async throws {
        try await withServer { _, port in
            _ = try await post(port, "exposure", #"{"mode": "custom", "duration": 0.004, "iso": 100}"#)
            let dark = luma(try await photo(port))
            let s = try await post(port, "exposure", #"{"mode": "custom", "duration": 0.02, "iso": 200}"#)
            #expect((s["exposure"] as? [String: Any])?["duration"] as? Double == 0.02)
            let bright = luma(try await photo(port))
            #expect(bright > dark + 30, "mean luma \(dark) → \(bright)")
        }
    }

    @Test func continuousExposureConvergesToMidGreyAndBiasShiftsIt() async throws {
        try await withServer { _, port in
            _ = try await post(port, "exposure", #"{"mode": "custom", "duration": 0.001, "iso": 50}"#)
            _ = try await post(port, "exposure", #"{"mode": "continuous"}"#)
            let settled = try await photo(port) { s in
                let d = (s["exposure"] as? [String: Any])?["duration"] as? Double ?? 0
                return d > 0.005
            }
            let mid = luma(settled, y: 0, h: settled.height * 2 / 3)
            _ = try await post(port, "exposure", #"{"bias": 1.5}"#)
            let brighter = luma(try await photo(port), y: 0, h: settled.height * 2 / 3)
            #expect(brighter > mid + 20, "bias +1.5 EV: \(mid) → \(brighter)")
        }
    }

    @Test func torchOnIsBrighter() async throws {
        try await withServer { _, port in
            _ = try await post(port, "exposure", #"{"mode": "custom", "duration": 0.005, "iso": 100}"#)
            let off = luma(try await photo(port))
            let s = try await post(port, "torch", #"{"mode": "on", "level": 1}"#)
            #expect((s["torch"] as? [String: Any])?["mode"] as? String == "on")
            let on = luma(try await photo(port))
            #expect(on > off + 30, "torch: \(off) → \(on)")
        }
    }

    @Test func focusBlursAwayFromTheSubjectAndConverges() async throws {
        try await withServer { _, port in
            let sharp = sharpness(try await photo(port) { s in
                ((s["focus"] as? [String: Any])?["lensPosition"] as? Double).map { abs($0 - 0.3) < 0.01 } ?? false
            })
            _ = try await post(port, "focus", #"{"mode": "locked", "lensPosition": 1.0}"#)
            let blurred = sharpness(try await photo(port))
            #expect(blurred < sharp * 0.6, "locked far away: \(sharp) → \(blurred)")
            _ = try await post(port, "focus", #"{"mode": "auto"}"#)
            let refocused = sharpness(try await photo(port) { s in
                ((s["focus"] as? [String: Any])?["lensPosition"] as? Double).map { abs($0 - 0.3) < 0.01 } ?? false
            })
            #expect(refocused > sharp * 0.9, "auto focus converges to sharp")
        }
    }

    @Test func theFocusPointPicksTheSubject() async throws {
        try await withServer { _, port in
            _ = try await post(port, "focus", #"{"mode": "continuous", "point": {"x": 0.5, "y": 0.9}}"#)
            let far = try await photo(port) { s in
                ((s["focus"] as? [String: Any])?["lensPosition"] as? Double).map { abs($0 - 0.7) < 0.01 } ?? false
            }
            _ = try await post(port, "focus", #"{"mode": "continuous", "point": {"x": 0.5, "y": 0.2}}"#)
            let near = try await photo(port) { s in
                ((s["focus"] as? [String: Any])?["lensPosition"] as? Double).map { abs($0 - 0.3) < 0.01 } ?? false
            }
            #expect(sharpness(far) < sharpness(near) * 0.7, "focusing on the floor blurs the bars")
        }
    }

    @Test func whiteBalanceTints() async throws {
        try await withServer { _, port in
            func tint(_ i: RGBImage) -> Double {  // blue minus red on the grey floor band
                let m = i.mean(x: 10, y: i.height * 3 / 4, width: i.width - 20, height: 20)
                return m.b - m.r
            }
            let warm = try await post(port, "white-balance", #"{"temperature": 7500}"#)
            #expect((warm["whiteBalance"] as? [String: Any])?["mode"] as? String == "locked")
            let w = tint(try await photo(port))
            _ = try await post(port, "white-balance", #"{"mode": "locked", "temperature": 2800}"#)
            let c = tint(try await photo(port))
            #expect(w < -5 && c > 5, "7500 K warm (\(w)), 2800 K cool (\(c))")
        }
    }

    @Test func rotationSwapsWidthAndHeightAndMirroringFlips() async throws {
        try await withServer { _, port in
            let upright = try await photo(port)
            _ = try await post(port, "orientation", #"{"rotation": 90}"#)
            let turned = try await photo(port)
            #expect(turned.width == 288 && turned.height == 352)
            // Turned clockwise: the white (leftmost) bar is now at the top.
            // (The left of the turned frame is the source's floor band, its right the bars.)
            let top = turned.mean(x: turned.width * 3 / 4, y: 5, width: 20, height: 20)
            #expect(top.r > 200 && top.g > 200 && top.b > 200)
            _ = try await post(port, "orientation", #"{"rotation": 0, "mirrored": true}"#)
            let mirrored = try await photo(port)
            let leftBefore = upright.mean(x: 5, y: 40, width: 20, height: 40)
            let leftAfter = mirrored.mean(x: 5, y: 40, width: 20, height: 40)
            #expect(leftBefore.r > 200 && leftAfter.r < 60, "the black bar moved to the left")
        }
    }

    @Test func aCaptureIsAFrameExposedAfterTheRequest() async throws {
        try await withServer { _, port in
            let viewer = try TestConnection(port: port)  // keep frames flowing to the hub
            try viewer.request("GET", "/stream")
            try await viewer.read { Multipart.parse($0).parts.count >= 2 }
            for _ in 0..<3 {
                let current = UInt64(try await fetch(port, "/snapshot").headers["x-frame-sequence"] ?? "0") ?? 0
                let asked = Date().timeIntervalSince1970
                let r = try await fetch(port, "POST", "/api/session/capture", body: #"{"quality": 95}"#)
                #expect(r.status == 200)
                let seq = UInt64(r.headers["x-frame-sequence"] ?? "") ?? 0
                let at = Double(r.headers["x-capture-timestamp"] ?? "") ?? 0
                #expect(seq > current, "sequence \(seq) after \(current)")
                #expect(at >= asked - 0.001, "exposed at \(at), asked at \(asked)")
                #expect(try JPEGDecoder.size(of: r.body) == (352, 288) ? true : false)
            }
        }
    }

    @Test func captureQualityChangesTheFile() async throws {
        try await withServer { _, port in
            let low = try await fetch(port, "POST", "/api/session/capture?quality=10")
            let high = try await fetch(port, "POST", "/api/session/capture", body: #"{"quality": 100}"#)
            #expect(low.status == 200 && high.status == 200)
            #expect(high.body.count > low.body.count * 2)
        }
    }

    @Test func fiftyParallelZoomsEndInOneOfThem() async throws {
        // 50 connections at once from one address: above the default per-address limit (32).
        try await withServer({ $0.server.maxConnectionsPerAddress = 64 }) { _, port in
            let factors = (0..<50).map { 1 + Double($0) * 0.125 }
            let answers = try await withThrowingTaskGroup(of: Double?.self) { group in
                for f in factors {
                    group.addTask {
                        let r = try await fetch(port, "POST", "/api/session/zoom", body: #"{"factor": \#(f)}"#)
                        return ((r.json as? [String: Any])?["zoom"] as? [String: Any])?["factor"] as? Double
                    }
                }
                return try await group.reduce(into: [Double?]()) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0.map { factors.contains($0) } ?? false }, "every answer is one request's factor")
            let final = ((try await fetch(port, "/api/session").json as? [String: Any])?["zoom"] as? [String: Any])?["factor"] as? Double
            #expect(final.map { factors.contains($0) } == true, "the final state is one of them: \(String(describing: final))")
        }
    }

    @Test func aSwitchToAFailingCameraLeavesTheOldOneStreaming() async throws {
        try await withServer({ c in
            c.cameras = .list([.init(id: "rear", source: .synthetic, position: "rear"),
                               .init(id: "broken", source: .image, path: "/nonexistent/missing.jpg", position: "front")])
        }) { _, port in
            let viewer = try TestConnection(port: port)
            try viewer.request("GET", "/stream")
            try await viewer.read { Multipart.parse($0).parts.count >= 1 }
            let r = try await fetch(port, "POST", "/api/session/switch")
            #expect(r.status == 503)
            #expect((r.json as? [String: [String: Any]])?["error"]?["code"] as? String == "camera_unavailable")
            #expect((r.json as? [String: [String: Any]])?["error"]?["camera"] as? String == "broken", "names the camera")
            let s = try #require(try await fetch(port, "/api/session").json as? [String: Any])
            #expect((s["camera"] as? [String: Any])?["id"] as? String == "rear" && s["state"] as? String == "running")
            let before = Multipart.parse(viewer.body).parts.count
            try await viewer.read { Multipart.parse($0).parts.count >= before + 3 }
            #expect(Multipart.parse(viewer.body).parts.count >= before + 3, "the viewer still gets frames")
        }
    }

    @Test func theImageCameraExercisesTheUnsupportedPaths() async throws {
        let image = packageRoot + "/Tests/ViewfinderAppTests/Fixtures/desk.jpg"
        try await withServer({ c in
            c.cameras = .list([.init(id: "desk", source: .image, path: image, position: "front")])
            c.session.preset = "640x480"
        }) { _, port in
            let focus = try await fetch(port, "POST", "/api/session/focus", body: #"{"mode": "auto"}"#)
            #expect(focus.status == 422)
            let err = (focus.json as? [String: [String: Any]])?["error"]
            #expect(err?["code"] as? String == "unsupported" && err?["supported"] as? [String] == ["locked"])
            let torch = try await fetch(port, "POST", "/api/session/torch", body: #"{"mode": "on"}"#)
            #expect(torch.status == 409)
            #expect((torch.json as? [String: [String: Any]])?["error"]?["code"] as? String == "torch_unavailable")
            let custom = try await fetch(port, "POST", "/api/session/exposure", body: #"{"mode": "custom", "duration": 0.01}"#)
            #expect(custom.status == 422)
            let zoom = try await fetch(port, "POST", "/api/session/zoom", body: #"{"factor": 2}"#)
            #expect(zoom.status == 200, "digital zoom works on any camera")
            let s = try #require(try await fetch(port, "/api/session").json as? [String: Any])
            #expect((s["torch"] as? [String: Any])?["available"] as? Bool == false)
        }
    }

    @Test func captureWhenStoppedIs409() async throws {
        try await withServer { _, port in
            _ = try await fetch(port, "POST", "/api/session/stop")
            let r = try await fetch(port, "POST", "/api/session/capture")
            #expect(r.status == 409)
            #expect((r.json as? [String: [String: Any]])?["error"]?["code"] as? String == "session_not_running")
        }
    }
}
