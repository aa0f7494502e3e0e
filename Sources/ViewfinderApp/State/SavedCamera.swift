// One camera's saved settings (issue 57), each part the body of the API call that sets it:
//
//   "format"       POST …/session/prepare        {"preset" | "width"+"height", "fps", "pixelFormat"}
//   "orientation"  POST …/session/orientation    {"rotation", "mirrored"}
//   "zoom"         POST …/session/zoom           {"factor", "center"}
//   "focus"        POST …/session/focus          {"mode", "lensPosition"?, "point"?}
//   "exposure"     POST …/session/exposure       {"mode", "duration"?, "iso"?, "bias"?, "point"?}
//   "whiteBalance" POST …/session/white-balance  {"mode", "temperature"?}
//   "controls"     POST …/session/controls       {"<key>": value, …}  (those no setting stands for)
//   "audio"        POST …/session/audio          {"muted", "gainDb"}
//   "motion"       POST …/session/motion         {"enabled", "threshold", "masks", …}
//   "live"         POST …/session/live           {"bitrate"?, "sub": {"bitrate"?}}  (caps set at runtime)
//   "running"      POST /api/cameras/{id}/session/start or /stop: true | false — whether it runs
//                  in its own right (the keeper's, from MultiCamSession; read when cameras start)
//
// So a saved state is replayed through the calls' own decoding and validation: what today's
// camera or configuration no longer allows is refused as the call would refuse it, and that
// part is dropped (and said). A part is what the user set, not what an automatic mode read
// back: a continuous exposure is saved as its mode, a custom one with its duration and ISO,
// and a locked one with what it holds (after a power cut the camera is at its defaults).
// The torch is never saved: a light left on after a power cut is a hazard.

import CameraCore
import HTTPServer
import JSON
import Session

enum SavedCamera {
    /// The parts in the order they are replayed: the format first (the camera opens at it).
    static let order = ["format", "orientation", "zoom", "focus", "exposure", "whiteBalance", "controls", "audio", "motion", "live"]
    /// Whether the camera runs in its own right: not replayed, read when the cameras start.
    static let running = "running"

    /// The parts of `s` as the calls' bodies; `caps` says which optional fields the camera takes.
    static func parts(of s: SessionState, _ caps: Capabilities) -> [String: JSONValue] {
        var parts: [String: JSONValue] = [:]
        if let f = s.format {
            var format: [String: JSONValue] = ["fps": .number(Double(f.fps)), "pixelFormat": .string(f.pixelFormat.rawValue)]
            // A named preset as named; a size asked for by width and height (ONVIF's encoder
            // configuration) by the size the camera gave, which prepare takes back as it is.
            if Preset(s.preset) != nil {
                format["preset"] = .string(s.preset)
            } else {
                format["width"] = .number(Double(f.width))
                format["height"] = .number(Double(f.height))
            }
            parts["format"] = .object(format)
        }
        parts["orientation"] = .object(["rotation": .number(Double(s.orientation.rotation)), "mirrored": .bool(s.orientation.mirrored)])
        parts["zoom"] = .object(["factor": .number(s.zoom.factor), "center": point(s.zoom.center)])
        var focus: [String: JSONValue] = ["mode": .string(s.focus.mode.rawValue)]
        if s.focus.mode == .locked && caps.lensPosition { focus["lensPosition"] = .number(s.focus.lensPosition) }
        if caps.focusPointOfInterest { focus["point"] = point(s.focus.point) }
        parts["focus"] = .object(focus)
        var exposure: [String: JSONValue] = ["mode": .string(s.exposure.mode.rawValue)]
        // Only what the camera takes (a gain-only camera has no duration: a saved one would be refused).
        if s.exposure.mode == .custom || (s.exposure.mode == .locked && s.exposure.held) {
            if caps.exposureDuration != nil { exposure["duration"] = .number(s.exposure.duration) }
            if caps.iso != nil { exposure["iso"] = .number(s.exposure.iso) }
        }
        if caps.exposureBias != nil { exposure["bias"] = .number(s.exposure.bias) }
        if caps.exposurePointOfInterest { exposure["point"] = point(s.exposure.point) }
        parts["exposure"] = .object(exposure)
        var wb: [String: JSONValue] = ["mode": .string(s.whiteBalance.mode.rawValue)]
        if s.whiteBalance.mode == .locked && caps.whiteBalanceTemperature != nil { wb["temperature"] = .number(s.whiteBalance.temperature) }
        parts["whiteBalance"] = .object(wb)
        parts["controls"] = .object(s.controls.mapValues { .number(Double($0)) })
        if let a = s.audio { parts["audio"] = .object(["muted": .bool(a.muted), "gainDb": .number(a.gainDb)]) }
        let m = s.motion
        parts["motion"] = .object(["enabled": .bool(m.enabled), "threshold": .number(m.threshold),
                                   "masks": .array(m.masks.map { .array($0.map { .array($0.map { .number($0) }) }) }),
                                   "preRoll": .number(m.preRoll), "postRoll": .number(m.postRoll), "record": .bool(m.record)])
        var live: [String: JSONValue] = [:], sub: [String: JSONValue] = [:]
        if let cap = s.live.first(where: { $0.name == "main" })?.bitrateSet { live["bitrate"] = .number(Double(cap)) }
        if let cap = s.live.first(where: { $0.name == "sub" })?.bitrateSet { sub["bitrate"] = .number(Double(cap)) }
        live["sub"] = .object(sub)
        parts["live"] = .object(live)
        return parts
    }

    /// Replays `parts` on `session`, in `order`, each through its call; answers the parts
    /// refused, each with why (unknown parts too).
    static func replay(_ parts: [String: JSONValue], on session: CaptureSession) async -> [String] {
        var dropped: [String] = []
        for name in parts.keys.sorted() where !order.contains(name) && name != running { dropped.append("\(name): not a saved part this build knows") }
        for name in order {
            guard let body = parts[name] else { continue }
            if name == "controls", case .object(let fields) = body {
                // Each control on its own: one this camera no longer has does not take the others.
                for key in fields.keys.sorted() {
                    do { _ = try await session.setControls(try controlValues([key: fields[key]!])) } catch {
                        dropped.append("controls.\(key): \(why(error))")
                    }
                }
                continue
            }
            do {
                let reader: JSONObjectReader
                do throws(JSONFieldError) { reader = try JSONObjectReader(body, nullIsAbsent: false) } catch {
                    throw JSONFieldError(path: "", problem: "not an object")
                }
                try await apply(name, reader, on: session)
            } catch {
                dropped.append("\(name): \(why(error))")
            }
        }
        return dropped
    }

    /// A refusal as the call would answer it: the one error mapping the HTTP answers use.
    private static func why(_ error: any Error) -> String { (error as? any ResponseError)?.message ?? "\(error)" }

    private static func apply(_ name: String, _ b: JSONObjectReader, on s: CaptureSession) async throws {
        switch name {
        case "format": try await s.configure(try PrepareRequest(reading: b))
        case "orientation": try await s.orientation(try OrientationRequest(reading: b))
        case "zoom": try await s.zoom(try ZoomRequest(reading: b))
        case "focus": try await s.focus(try FocusRequest(reading: b))
        case "exposure": try await s.exposure(try ExposureRequest(reading: b))
        case "whiteBalance": try await s.whiteBalance(try WhiteBalanceRequest(reading: b))
        case "audio": try await s.setAudio(try AudioRequest(reading: b))
        case "motion": try await s.setMotion(try MotionBody(reading: b).change)
        case "live": _ = await s.setLive(try LiveRequest(reading: b))
        default: break
        }
    }

    private static func point(_ p: Point) -> JSONValue { .object(["x": .number(p.x), "y": .number(p.y)]) }
}
