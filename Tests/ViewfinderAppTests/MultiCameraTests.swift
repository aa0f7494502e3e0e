// Several cameras at once over HTTP, as clients use them: each camera's own session and
// stream, mjpg-streamer's `?action=stream_N`, a port of its own for one camera, events and
// metrics by camera, photos that record their camera, and the main session sharing a
// running camera.

import CaptureTestSupport
import CameraCore
import Foundation
import HTTPServer
import JPEG
import Session
import Testing
@testable import ViewfinderApp
import JSON

@Suite(.serialized) struct MultiCameraTests {
    /// Two synthetic cameras of their own: the rear at 640x480, the front at 352x288.
    static func twoCameras(_ c: inout Configuration) {
        c.cameras = .list([
            .init(id: "rear", source: .synthetic, position: "rear", preset: "640x480"),
            .init(id: "front", source: .synthetic, position: "front", preset: "352x288"),
        ])
    }

    func json(_ port: Int, _ method: String, _ path: String, _ body: String? = nil) async throws -> (Int, [String: Any]) {
        let r = try await fetch(port, method, path, body: body)
        return (r.status, r.json as? [String: Any] ?? [:])
    }

    /// The X-Timestamp of every complete part of a multipart body, in order (unix seconds
    /// with six decimals: the same length for decades, so they compare as strings).
    static func stamps(_ body: [UInt8]) -> [String] { Multipart.parse(body).parts.map { $0.headers["x-timestamp"] ?? "" } }

    func errorCode(_ j: [String: Any]) -> String? { (j["error"] as? [String: Any])?["code"] as? String }

    func size(_ jpeg: [UInt8]) -> String {
        guard let s = try? JPEGDecoder.size(of: jpeg) else { return "not a JPEG" }
        return "\(s.width)x\(s.height)"
    }

    /// A setting on one camera changes its state and pixels only; stopping it leaves the
    /// other running.
    @Test func aControlOrAStopOnOneLeavesTheOtherAlone() async throws {
        try await withServer({ Self.twoCameras(&$0); $0.session.autostart = false }) { _, port in
            _ = try await json(port, "POST", "/api/cameras/rear/session/start")
            _ = try await json(port, "POST", "/api/cameras/front/session/start")
            let (_, frontBefore) = try await json(port, "GET", "/api/cameras/front/session")
            func meanLuma(_ camera: String) async throws -> Double {
                let jpeg = try await fetch(port, "/cameras/\(camera)/snapshot").body
                let img = try JPEGDecoder.decodeRGB(jpeg)
                var sum = 0.0
                for y in stride(from: 0, to: img.height, by: 4) {
                    for x in stride(from: 0, to: img.width, by: 4) { let p = img.pixel(x: x, y: y); sum += Double(p.r + p.g + p.b) / 3 }
                }
                return sum / Double((img.height / 4 + 1) * (img.width / 4 + 1))
            }
            let frontLuma = try await meanLuma("front"), rearLuma = try await meanLuma("rear")
            let (status, rearState) = try await json(port, "POST", "/api/cameras/rear/session/exposure",
                                                     #"{"mode": "custom", "duration": 0.05, "iso": 800}"#)
            #expect(status == 200 && (rearState["exposure"] as? [String: Any])?["mode"] as? String == "custom")
            #expect(rearState["main"] as? Bool == true)
            #expect(try await eventually(timeout: TestTime.patience) { try await meanLuma("rear") > rearLuma + 20 }, "the rear camera brightens")
            let (_, frontAfter) = try await json(port, "GET", "/api/cameras/front/session")
            #expect((frontAfter["exposure"] as? [String: Any])?["mode"] as? String == (frontBefore["exposure"] as? [String: Any])?["mode"] as? String)
            #expect(abs(try await meanLuma("front") - frontLuma) < 12, "the front camera's pixels are as they were")

            let (_, stopped) = try await json(port, "POST", "/api/cameras/rear/session/stop")
            #expect(stopped["state"] as? String == "idle")
            let (_, front) = try await json(port, "GET", "/api/cameras/front/session")
            #expect(front["state"] as? String == "running" && front["main"] as? Bool == false)
            let viewer = try TestConnection(port: port)
            try viewer.request("GET", "/cameras/front/stream")
            try await viewer.read { Multipart.parse($0).parts.count >= 3 }
            #expect(Multipart.parse(viewer.body).parts.count >= 3, "the other camera streams on")
        }
    }

    /// mjpg-streamer's multi-input form: `stream_N` and `snapshot_N` count in /api/cameras.
    @Test func actionStreamNAndSnapshotN() async throws {
        try await withServer({ Self.twoCameras(&$0); $0.cameras = .list([
            .init(id: "rear", source: .synthetic, position: "rear", autostart: true, preset: "640x480"),
            .init(id: "front", source: .synthetic, position: "front", autostart: true, preset: "352x288"),
        ]) }) { _, port in
            let s0 = try await fetch(port, "/?action=snapshot_0"), s1 = try await fetch(port, "/?action=snapshot_1")
            #expect(s0.status == 200 && size(s0.body) == "640x480")
            #expect(s1.status == 200 && size(s1.body) == "352x288" && s1.headers["x-viewfinder-camera"] == "front")
            let c = try TestConnection(port: port)
            try c.request("GET", "/?action=stream_1")
            try await c.read { Multipart.parse($0).parts.count >= 2 }
            #expect(size(Multipart.parse(c.body).parts[1].body) == "352x288")
            let missing = try await fetch(port, "/?action=stream_2")
            #expect(missing.status == 404 && errorCode(missing.json as? [String: Any] ?? [:]) == "unknown_camera")
            #expect(try await fetch(port, "/?action=snapshot").headers["x-viewfinder-camera"] == "rear", "plain action: the main camera")
            let (_, cams) = try await json(port, "GET", "/api/cameras")
            #expect((cams["cameras"] as? [[String: Any]])?.map { $0["state"] as? String } == ["running", "running"], "cameras[].autostart")
        }
    }

    @Test(arguments: [("GET", "/api/cameras/nope/session"), ("POST", "/api/cameras/nope/session/zoom"),
                      ("POST", "/api/cameras/nope/session/start"), ("GET", "/cameras/nope/stream"),
                      ("GET", "/cameras/nope/snapshot"), ("GET", "/api/events?camera=nope"),
                      ("POST", "/api/cameras/nope/session/capture")])
    func anUnknownCameraIs404(_ method: String, _ path: String) async throws {
        try await withServer({ Self.twoCameras(&$0) }) { _, port in
            let before = try await json(port, "GET", "/api/session").1
            let (status, body) = try await json(port, method, path, method == "POST" && path.hasSuffix("zoom") ? #"{"factor": 2}"# : nil)
            #expect(status == 404 && errorCode(body) == "unknown_camera", "\(status) \(body)")
            #expect(((body["error"] as? [String: Any])?["cameras"] as? [String]) == ["rear", "front"], "names the cameras there are")
            let after = try await json(port, "GET", "/api/session").1
            #expect(after["main"] as? Bool == true && before["main"] as? Bool == true)
            for key in ["state", "camera", "format", "zoom", "orientation", "torch"] {
                #expect(NSDictionary(dictionary: ["v": after[key] ?? NSNull()]).isEqual(to: ["v": before[key] ?? NSNull()]), "\(key) unchanged")
            }
        }
    }

    /// The main session shares the front camera's running session: its settings are kept,
    /// `/stream` viewers move with it, and the rear camera (the main session's only) stops.
    @Test func switchSharesARunningCameraAndTheMainStreamFollows() async throws {
        try await withServer({ Self.twoCameras(&$0) }) { app, port in
            _ = try await json(port, "POST", "/api/cameras/front/session/start")
            _ = try await json(port, "POST", "/api/cameras/front/session/zoom", #"{"factor": 3}"#)
            let viewer = try TestConnection(port: port)
            try viewer.request("GET", "/stream")
            try await viewer.read { Multipart.parse($0).parts.count >= 1 }
            #expect(size(Multipart.parse(viewer.body).parts[0].body) == "640x480")
            let (status, state) = try await json(port, "POST", "/api/session/switch")
            #expect(status == 200 && (state["camera"] as? [String: Any])?["id"] as? String == "front")
            #expect((state["zoom"] as? [String: Any])?["factor"] as? Double == 3 && state["main"] as? Bool == true, "shared as it runs")
            try await viewer.read(timeout: TestTime.patience) { Multipart.parse($0).parts.last.map { self.size($0.body) } == "352x288" }
            #expect(size(Multipart.parse(viewer.body).parts.last!.body) == "352x288", "the /stream viewer followed the main session")
            #expect(try app.cameras.session("front").hub.viewerCount == 1 && (try app.cameras.session("rear").hub.viewerCount) == 0)
            let (_, rear) = try await json(port, "GET", "/api/cameras/rear/session")
            #expect(rear["state"] as? String == "idle" && rear["main"] as? Bool == false)
            #expect(try await json(port, "GET", "/api/session").1["main"] as? Bool == true)
        }
    }

    /// Every event names its camera; `?camera=` takes one camera's; photos record theirs.
    @Test func eventsAndPhotosNameTheirCamera() async throws {
        try await withServer({ Self.twoCameras(&$0) }) { _, port in
            let all = try TestConnection(port: port), front = try TestConnection(port: port)
            try all.request("GET", "/api/events")
            try front.request("GET", "/api/events?camera=front")
            try await all.read { String(decoding: $0, as: UTF8.self).contains("event: state") }
            try await front.read { String(decoding: $0, as: UTF8.self).contains("event: state") }
            _ = try await json(port, "POST", "/api/cameras/front/session/start")
            _ = try await json(port, "POST", "/api/session/zoom", #"{"factor": 2}"#)
            let (status, photo) = try await json(port, "POST", "/api/cameras/front/session/capture?store=1")
            #expect(status == 201 && photo["camera"] as? String == "front", "\(photo)")
            try await all.read { String(decoding: $0, as: UTF8.self).contains("event: photo") }
            try await front.read { String(decoding: $0, as: UTF8.self).contains("event: photo") }
            let frontEvents = ServerSentEventsText(front.body), allEvents = ServerSentEventsText(all.body)
            #expect(!frontEvents.states.isEmpty && frontEvents.states.allSatisfy { ($0["camera"] as? [String: Any])?["id"] as? String == "front" })
            #expect(Set(allEvents.states.compactMap { ($0["camera"] as? [String: Any])?["id"] as? String }) == ["rear", "front"])
            #expect(allEvents.states.allSatisfy { $0["main"] as? Bool == (($0["camera"] as? [String: Any])?["id"] as? String == "rear") })
            #expect(frontEvents.photos.first?["camera"] as? String == "front")
            let (_, photos) = try await json(port, "GET", "/api/photos")
            #expect((photos["photos"] as? [[String: Any]])?.first?["camera"] as? String == "front")
            #expect(try await fetch(port, "/api/photos/\(photo["id"] as? String ?? "")").status == 200)
        }
    }

    @Test func metricsAreLabelledByCamera() async throws {
        try await withServer({ Self.twoCameras(&$0) }) { _, port in
            let text = String(decoding: try await fetch(port, "/metrics").body, as: UTF8.self)
            #expect(text.contains("viewfinder_up{camera=\"rear\"} 1"), "\(text)")
            #expect(text.contains("viewfinder_up{camera=\"front\"} 0"))
            #expect(text.contains("viewfinder_stream_clients{camera=\"front\"} 0"))
            #expect(text.contains("viewfinder_main_camera{camera=\"rear\"} 1"))
        }
    }

    /// crowsnest's layout: a port of its own for one camera, hard-wired `/?action=stream`.
    @Test func aPortOfItsOwnForOneCamera() async throws {
        try await withServer({
            Self.twoCameras(&$0)
            $0.server.listen = [.init(port: 0, camera: "front")]
        }) { app, port in
            let extra = try #require(app.listenerPorts.first)
            #expect(extra != port && extra > 0)
            _ = try await json(port, "POST", "/api/cameras/front/session/start")
            let snap = try await fetch(extra, "/?action=snapshot")
            #expect(snap.status == 200 && size(snap.body) == "352x288")
            let c = try TestConnection(port: extra)
            try c.request("GET", "/?action=stream")
            try await c.read { Multipart.parse($0).parts.count >= 2 }
            #expect(size(Multipart.parse(c.body).parts[1].body) == "352x288")
            #expect(try await fetch(extra, "/api/session").status == 404, "only the camera's preview there")
        }
    }

    @Test func configurationOfCamerasAndListeners() throws {
        let c = try Configuration.parse(Array("""
        {"cameras": [{"id": "nozzle", "source": "synthetic", "autostart": true, "preset": "640x480", "fps": 15},
                     {"id": "bed", "source": "synthetic"}],
         "server": {"listen": [{"port": 8081, "camera": "bed"}]}}
        """.utf8))
        guard case .list(let e) = c.cameras else { Issue.record("not a list"); return }
        #expect(e[0].autostart == true && e[0].preset == "640x480" && e[0].fps == 15 && e[1].autostart == nil)
        #expect(c.server.listen == [.init(port: 8081, camera: "bed", host: nil)])
        #expect(try Configuration.parse(Array(c.jsonText.utf8)) == c, "check-config's output reads back")
        for (bad, key) in [(#"{"cameras": [{"id": "a", "source": "synthetic", "preset": "huge"}]}"#, "cameras[0].preset"),
                           (#"{"cameras": [{"id": "a", "source": "synthetic", "autostart": 1}]}"#, "cameras[0].autostart"),
                           (#"{"server": {"listen": [{"port": 8081}]}}"#, "server.listen[0].camera"),
                           (#"{"server": {"listen": {"port": 8081}}}"#, "server.listen")] {
            #expect { try Configuration.parse(Array(bad.utf8)) } throws: { ($0 as? Configuration.Error)?.description.contains(key) == true }
        }
        var dup = Configuration()
        dup.cameras = .list([.init(id: "a", source: .synthetic)])
        dup.server.listen = [.init(port: 8080, camera: "a")]
        #expect(throws: JSONFieldError.self) { try dup.validate() }
        dup.server.listen = [.init(port: 8081, camera: "b")]
        #expect(throws: JSONFieldError.self) { try dup.validate() }
    }

    /// ENOSPC at STREAMON (two webcams on one USB 2 bus) is a 503 that says what helps.
    @Test func noBandwidthLeftIsA503ThatSaysWhatHelps() {
        let e = SessionError.camera(.system(call: "VIDIOC_STREAMON", errno: ENOSPC)).http
        #expect(e.status == 503 && e.code == "camera_unavailable")
        #expect(e.message.contains("bandwidth") && e.message.contains("MJPEG") && e.message.contains("smaller size"))
        let s = SessionError.switchFailed(id: "bed", cause: .system(call: "VIDIOC_STREAMON", errno: ENOSPC)).http
        #expect(s.status == 503 && s.message.contains("bandwidth"))
    }
}

/// The `state` and `photo` events of an SSE body, decoded.
struct ServerSentEventsText {
    var states: [[String: Any]] = [], photos: [[String: Any]] = []
    init(_ body: [UInt8]) {
        for block in String(decoding: body, as: UTF8.self).components(separatedBy: "\n\n") {
            let lines = block.split(separator: "\n")
            guard let name = lines.first(where: { $0.hasPrefix("event: ") })?.dropFirst(7),
                  let data = lines.first(where: { $0.hasPrefix("data: ") })?.dropFirst(6),
                  let obj = try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any] else { continue }
            if name == "state" { states.append(obj) } else if name == "photo" { photos.append(obj) }
        }
    }
}
