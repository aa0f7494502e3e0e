import CaptureTestSupport
import Foundation
import JPEG
import ONVIF
import Testing
@testable import ViewfinderApp

/// What a user sets lasts (issue 57): saved by the running server, replayed by the next one
/// before its first frame, through the calls' own validation.
@Suite struct StateRestoreTests {
    let dir = NSTemporaryDirectory() + "vf-state-\(UUID().uuidString)"
    var path: String { dir + "/state.json" }

    func post(_ port: Int, _ path: String, _ body: String) async throws {
        let r = try await fetch(port, "POST", path, body: body)
        #expect(r.status == 200, "\(path) \(body): \(r.text)")
    }

    func json(_ port: Int, _ path: String) async throws -> [String: Any] {
        try #require(try await fetch(port, path).json as? [String: Any])
    }

    /// The settings a user set, as the state reports them.
    func chosen(_ s: [String: Any]) -> String {
        func o(_ k: String) -> [String: Any] { s[k] as? [String: Any] ?? [:] }
        let zoom = o("zoom"), focus = o("focus"), exposure = o("exposure"), wb = o("whiteBalance")
        let center = zoom["center"] as? [String: Any] ?? [:], format = o("format"), motion = o("motion")
        return [s["preset"], format["width"], format["fps"], zoom["factor"], center["x"], center["y"], focus["mode"],
                focus["lensPosition"], exposure["mode"], exposure["duration"], exposure["iso"], exposure["bias"], wb["mode"],
                wb["temperature"], o("orientation")["rotation"], o("orientation")["mirrored"], motion["enabled"],
                motion["threshold"]].map { "\($0 ?? "nil")" }.joined(separator: " ")
            + " live " + ((s["live"] as? [[String: Any]]) ?? []).map { "\($0["name"] ?? "")=\($0["bitrateSet"] ?? "nil")" }.joined(separator: ",")
    }

    func photo(_ port: Int) async throws -> RGBImage {
        let r = try await fetch(port, "POST", "/api/session/capture")
        #expect(r.status == 200, "capture: \(r.text)")
        return try JPEGDecoder.decodeRGB(r.body)
    }

    func luma(_ i: RGBImage) -> Double {
        let m = i.mean(x: 0, y: 0, width: i.width, height: i.height)
        return 0.299 * m.r + 0.587 * m.g + 0.114 * m.b
    }

    @Test func whatAUserSetIsThereAgainAfterARestartFromTheFirstFrame() async throws {
        var before = "", front = "", picture: RGBImage?
        try await withServer({ $0.state.directory = dir }) { _, port in
            try await post(port, "/api/session/prepare", #"{"preset": "640x480", "fps": 15}"#)
            try await post(port, "/api/session/zoom", #"{"factor": 2, "center": {"x": 0.4, "y": 0.6}}"#)
            try await post(port, "/api/session/focus", #"{"mode": "locked", "lensPosition": 0.25}"#)
            try await post(port, "/api/session/exposure", #"{"duration": 0.004, "iso": 200, "bias": -0.5}"#)
            try await post(port, "/api/session/white-balance", #"{"temperature": 3200}"#)
            try await post(port, "/api/session/orientation", #"{"rotation": 180, "mirrored": true}"#)
            try await post(port, "/api/session/motion", #"{"enabled": true, "threshold": 7}"#)
            try await post(port, "/api/session/live", #"{"bitrate": 1500, "sub": {"bitrate": 300}}"#)
            // A camera that does not run keeps its own: saved too.
            try await post(port, "/api/cameras/front/session/zoom", #"{"factor": 3}"#)
            before = chosen(try await json(port, "/api/session"))
            front = chosen(try await json(port, "/api/cameras/front/session"))
            picture = try await photo(port)
            let saved = try await eventually { (try await json(port, "/api/state"))["saved"] as? Bool == true }
            #expect(saved, "every change on disk while it runs")
        }
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(!text.contains("torch"), "the torch is never saved")
        try await withServer({ $0.state.directory = dir }) { _, port in
            #expect(chosen(try await json(port, "/api/session")) == before)
            #expect(before.contains("main=1500") && before.contains("sub=300"), "\(before)")
            #expect(chosen(try await json(port, "/api/cameras/front/session")) == front)
            let report = try await json(port, "/api/state")
            #expect(report["loadedFrom"] as? String == "current")
            #expect((report["dropped"] as? [Any])?.isEmpty == true, "\(report)")
            // The picture itself: the same crop, orientation and exposure as before the restart.
            let a = try #require(picture), b = try await photo(port)
            #expect(a.width == b.width && a.height == b.height)
            #expect(abs(luma(a) - luma(b)) < 3, "luma \(luma(a)) before, \(luma(b)) after")
            let left = b.mean(x: 0, y: 0, width: b.width / 2, height: b.height), right = b.mean(x: b.width / 2, y: 0, width: b.width / 2, height: b.height)
            let la = a.mean(x: 0, y: 0, width: a.width / 2, height: a.height), ra = a.mean(x: a.width / 2, y: 0, width: a.width / 2, height: a.height)
            #expect(abs(left.r - la.r) < 4 && abs(right.b - ra.b) < 4, "the same part of the scene, the same way round")
        }
    }

    @Test func theMainCameraLastsAndSettingsBackAtTheStartAreNotSaved() async throws {
        try await withServer({ $0.state.directory = dir }) { _, port in
            try await post(port, "/api/session/switch", #"{"camera": "front"}"#)
            try await post(port, "/api/cameras/rear/session/zoom", #"{"factor": 2}"#)
            try await post(port, "/api/cameras/rear/session/zoom", #"{"factor": 1}"#)  // back where it started
            let saved = try await eventually {
                let r = try await json(port, "/api/state")
                return r["saved"] as? Bool == true && (r["state"] as? [String: Any])?["main"] as? String == "front"
            }
            #expect(saved)
            let state = try #require((try await json(port, "/api/state"))["state"] as? [String: Any])
            // Nor the switch's stop of rear: the main view left it, no user stopped it.
            #expect((state["cameras"] as? [String: Any])?["rear"] == nil, "zoom 1 is the start's: nothing of rear's saved: \(state)")
            #expect(state["mainRunning"] == nil, "the main view runs, as the configuration starts it")
        }
        try await withServer({ $0.state.directory = dir }) { _, port in
            let s = try await json(port, "/api/session")
            #expect((s["camera"] as? [String: Any])?["id"] as? String == "front", "front is main again")
        }
    }

    /// A saved setting today's camera refuses is dropped and said; a camera that is not here
    /// keeps its saved settings; the server starts either way.
    @Test func whatTodaysCamerasRefuseIsDroppedAndSaid() async throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data(#"{"version": 1, "state": {"cameras": {"rear": {"format": {"preset": "nonsense"}, "zoom": {"factor": 2}, "torchlight": {}}, "gone": {"zoom": {"factor": 3}}}, "main": "gone"}}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        try await withServer({ $0.state.directory = dir }) { _, port in
            let s = try await json(port, "/api/session")
            #expect((s["zoom"] as? [String: Any])?["factor"] as? Double == 2, "what it can take is applied")
            #expect(s["preset"] as? String == "352x288", "the configuration's preset where the saved one is refused")
            let report = try await json(port, "/api/state")
            let dropped = try #require(report["dropped"] as? [String])
            #expect(dropped.contains { $0.hasPrefix("cameras.rear.format:") && $0.contains("nonsense") }, "\(dropped)")
            #expect(dropped.contains { $0.hasPrefix("cameras.rear.torchlight:") }, "\(dropped)")
            let cameras = (report["state"] as? [String: Any])?["cameras"] as? [String: Any]
            #expect((cameras?["gone"] as? [String: Any])?["zoom"] != nil, "an absent camera's settings are kept")
            #expect((report["state"] as? [String: Any])?["main"] as? String == "gone", "and its being main, for when it is back")
            #expect(s["state"] as? String == "running", "the main view runs on the camera standing in for it")
        }
    }

    /// Whether each camera runs lasts: one stopped stays stopped, one started in its own right
    /// runs again (and runs on when the main view leaves it); a locked exposure holds its values.
    @Test func aCameraLeftStoppedOrRunningIsSoAgainAndALockHoldsItsValues() async throws {
        try await withServer({ $0.state.directory = dir }) { _, port in
            try await post(port, "/api/session/stop", "")
            try await post(port, "/api/cameras/front/session/start", "")
            try await post(port, "/api/cameras/front/session/exposure", #"{"mode": "locked", "duration": 0.004, "iso": 200}"#)
            let saved = try await eventually {
                let r = try await json(port, "/api/state")
                let cameras = (r["state"] as? [String: Any])?["cameras"] as? [String: Any]
                return r["saved"] as? Bool == true && (cameras?["front"] as? [String: Any])?["exposure"] != nil
            }
            #expect(saved)
        }
        try await withServer({ $0.state.directory = dir }) { _, port in
            let rear = try await json(port, "/api/session"), front = try await json(port, "/api/cameras/front/session")
            #expect(rear["state"] as? String == "idle", "stopped, as it was left")
            #expect(front["state"] as? String == "running", "running, as it was left")
            let e = front["exposure"] as? [String: Any] ?? [:]
            #expect(e["mode"] as? String == "locked" && e["duration"] as? Double == 0.004 && e["iso"] as? Double == 200, "\(e)")
            // In its own right: the main view coming to it and leaving again does not stop it.
            try await post(port, "/api/session/switch", #"{"camera": "front"}"#)
            try await post(port, "/api/session/switch", #"{"camera": "rear"}"#)
            #expect((try await json(port, "/api/cameras/front/session"))["state"] as? String == "running")
        }
    }

    /// Found by Tests/state/test_kill.py: a camera that ran, then stopped, locked from an
    /// automatic exposure, holds the values its state shows (the last it read back) — saved
    /// with them, and restored so, not locked afresh at whatever the camera has at the next start.
    @Test func aLockMadeWhileStoppedHoldsWhatTheStateShowed() async throws {
        var shown: [String: Any] = [:]
        try await withServer({ $0.state.directory = dir }) { _, port in
            try await post(port, "/api/session/exposure", #"{"mode": "continuous", "bias": 1}"#)
            // The automatic exposure moves off the placeholder 1/60 s at ISO 100 for a bias of +1.
            #expect(try await eventually {
                (try await json(port, "/api/session"))["exposure"].flatMap { ($0 as? [String: Any])?["duration"] as? Double } != 1.0 / 60
            })
            try await post(port, "/api/session/stop", "")
            let locked = try await fetch(port, "POST", "/api/session/exposure", body: #"{"mode": "locked"}"#)
            shown = try #require((locked.json as? [String: Any])?["exposure"] as? [String: Any])
            #expect(try await eventually {
                let r = try await json(port, "/api/state")
                let rear = ((r["state"] as? [String: Any])?["cameras"] as? [String: Any])?["rear"] as? [String: Any]
                return r["saved"] as? Bool == true && (rear?["exposure"] as? [String: Any])?["duration"] != nil
            }, "the lock is saved with its values")
        }
        try await withServer({ $0.state.directory = dir }) { _, port in
            let e = try #require((try await json(port, "/api/session"))["exposure"] as? [String: Any])
            #expect(e["mode"] as? String == "locked" && e["duration"] as? Double == shown["duration"] as? Double
                    && e["iso"] as? Double == shown["iso"] as? Double, "restored \(e), shown before \(shown)")
        }
    }

    /// A size asked by width and height (as ONVIF's encoder configuration asks) is not a
    /// named preset: it is saved as the size the camera gave, and the camera opens at it.
    @Test func aSizeThatIsNoPresetLasts() async throws {
        var format: [String: Any] = [:]
        try await withServer({ $0.state.directory = dir }) { _, port in
            try await post(port, "/api/session/prepare", #"{"width": 1000, "height": 700, "fps": 15}"#)
            format = try #require((try await json(port, "/api/session"))["format"] as? [String: Any])
        }
        try await withServer({ $0.state.directory = dir }) { _, port in
            let s = try await json(port, "/api/session")
            let now = try #require(s["format"] as? [String: Any])
            #expect(now["width"] as? Int == format["width"] as? Int && now["height"] as? Int == format["height"] as? Int
                    && now["fps"] as? Int == 15, "\(now) after, \(format) before")
            #expect((try await json(port, "/api/state"))["dropped"] as? [String] == [])
        }
    }

    @Test func aCorruptFileIsSetAsideAndTheServerStarts() async throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data(#"{"version": 1, "state": {"cameras": {"rear": {"zo"#.utf8).write(to: URL(fileURLWithPath: path))
        try await withServer({ $0.state.directory = dir }) { _, port in
            let report = try await json(port, "/api/state")
            #expect(report["loadedFrom"] as? String == "none")
            #expect((report["problems"] as? [String])?.first?.contains("set aside") == true, "\(report)")
            let s = try await json(port, "/api/session")
            #expect(s["state"] as? String == "running")
            let aside = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix("state.json.unusable-") }
            #expect(aside.count == 1)
        }
    }

    /// A directory it cannot write (here a file stands in its place, which stops root too):
    /// the change is applied, the server serves, and the state says it could not be saved.
    @Test func aStateThatCannotBeWrittenIsAppliedAndSaidUnsaved() async throws {
        try Data("not a directory".utf8).write(to: URL(fileURLWithPath: dir))
        try await withServer({ $0.state.directory = dir }) { _, port in
            try await post(port, "/api/session/zoom", #"{"factor": 2}"#)
            let said = try await eventually { (try await json(port, "/api/state"))["error"] as? String != nil }
            #expect(said, "the failed write is said")
            let report = try await json(port, "/api/state")
            #expect(report["saved"] as? Bool == false, "\(report)")
            #expect(((try await json(port, "/api/session"))["zoom"] as? [String: Any])?["factor"] as? Double == 2)
        }
        #expect(try String(contentsOfFile: dir, encoding: .utf8) == "not a directory", "nothing half-written")
    }

    /// One ONVIF PTZ call, unsigned (auth "none" on loopback operates).
    func ptz(_ port: Int, _ body: String) async throws -> TestConnection {
        let envelope = """
            <s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:p="http://www.onvif.org/ver20/ptz/wsdl" \
            xmlns:t="http://www.onvif.org/ver10/schema"><s:Body>\(body)</s:Body></s:Envelope>
            """
        return try await fetch(port, "POST", "/onvif/ptz_service", body: envelope, headers: ["Content-Type": "application/soap+xml"])
    }

    /// ONVIF's PTZ presets last: an NVR sets one once and expects it to stay.
    @Test func ptzPresetsLast() async throws {
        var token = ""
        try await withServer({ $0.state.directory = dir }) { _, port in
            _ = try await ptz(port, #"<p:AbsoluteMove><p:ProfileToken>rear_main</p:ProfileToken><p:Position><t:PanTilt x="0.5" y="0.5"/><t:Zoom x="1"/></p:Position></p:AbsoluteMove>"#)
            let set = try await ptz(port, "<p:SetPreset><p:ProfileToken>rear_main</p:ProfileToken><p:PresetName>door</p:PresetName></p:SetPreset>")
            #expect(set.status == 200, "\(set.text)")
            token = try #require(set.text.firstMatch(of: /PresetToken>([^<]+)</)).1.description
            let saved = try await eventually {
                let r = try await json(port, "/api/state")
                return r["saved"] as? Bool == true && (r["state"] as? [String: Any])?["ptzPresets"] != nil
            }
            #expect(saved)
        }
        try await withServer({ $0.state.directory = dir }) { app, port in
            let presets = try await ptz(port, "<p:GetPresets><p:ProfileToken>rear_main</p:ProfileToken></p:GetPresets>")
            #expect(presets.text.contains("door") && presets.text.contains(token), "\(presets.text)")
            #expect(app.ptzPresets.all["rear"]?.first?.position == PTZPosition(pan: 0.5, tilt: 0.5, zoom: 1))
            let next = try await ptz(port, "<p:SetPreset><p:ProfileToken>rear_main</p:ProfileToken></p:SetPreset>")
            #expect(!next.text.contains(">\(token)<"), "a new preset's token is not the kept one's: \(next.text)")
        }
    }

    @Test func persistFalseSavesNothing() async throws {
        try await withServer({ $0.state.directory = dir; $0.state.persist = false }) { _, port in
            try await post(port, "/api/session/zoom", #"{"factor": 2}"#)
            let report = try await json(port, "/api/state")
            #expect(report["persist"] as? Bool == false && report["file"] is NSNull)
        }
        #expect(!FileManager.default.fileExists(atPath: dir), "no state directory made")
    }
}
