// Request bodies as the contract spells them: each call's body type reads itself from a strict
// JSON object (unknown keys refused, types and ranges checked, each problem a JSONFieldError
// naming the field: 400 invalid_value). What depends on the camera is the session's to check.

import Barcodes
import CameraCore
import Capture
import HTTPServer
import JSON
import Movie
import Session

/// A body a route reads: the route parses the JSON, the type reads its fields.
protocol RequestBody: Sendable {
    init(reading body: JSONObjectReader) throws(JSONFieldError)
}

/// Request bodies: empty means "no options"; anything else must be a JSON object.
func bodyObject(_ request: Request) throws(HTTPError) -> JSONObjectReader {
    let trimmed = request.body.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
    if trimmed.isEmpty { return try! JSONObjectReader(.object([:]), nullIsAbsent: false) }
    let value: JSONValue
    do { value = try JSONValue.parse(request.body) } catch {
        throw HTTPError(400, "invalid_json", "The body is not valid JSON; send an object such as {\"camera\": \"front\"}.")
    }
    do throws(JSONFieldError) { return try JSONObjectReader(value, nullIsAbsent: false) } catch {
        throw HTTPError(400, "invalid_json", "The body must be a JSON object.")
    }
}

/// For calls that take no options: any key is an unknown key.
struct NoOptions: RequestBody {
    init(reading body: JSONObjectReader) throws(JSONFieldError) { try body.finish() }
}

/// `{"camera"?}`: the main session moves to that camera (or rear ↔ front).
struct SwitchBody: RequestBody {
    var camera: String?
    init(reading body: JSONObjectReader) throws(JSONFieldError) {
        camera = try body.string("camera")
        try body.finish()
    }
}

extension PrepareRequest: RequestBody {
    init(reading body: JSONObjectReader) throws(JSONFieldError) {
        self.init(camera: try body.string("camera"), preset: try body.string("preset"),
                  width: try body.int("width", in: 1...16384), height: try body.int("height", in: 1...16384),
                  fps: try body.int("fps", in: 1...240),
                  pixelFormat: try body.string("pixelFormat").map { s throws(JSONFieldError) in
                      guard let f = PixelFormat(rawValue: s) else {
                          throw JSONFieldError(path: "pixelFormat", problem: "unknown pixel format '\(s)'")
                      }
                      return f
                  })
        try body.finish()
    }
}

extension ZoomRequest: RequestBody {
    init(reading b: JSONObjectReader) throws(JSONFieldError) {
        guard let factor = try b.double("factor") else {
            throw JSONFieldError(path: "factor", problem: "required (the zoom factor, e.g. 2.0)")
        }
        var center: Point?
        if let c = try b.object("center") {
            guard let x = try c.double("x", in: 0...1), let y = try c.double("y", in: 0...1) else {
                throw JSONFieldError(path: "center", problem: "needs x and y between 0 and 1")
            }
            try c.finish()
            center = Point(x: x, y: y)
        }
        self.init(factor: factor, rate: try b.double("rate"), center: center)
        try b.finish()
    }
}

extension FocusRequest: RequestBody {
    init(reading b: JSONObjectReader) throws(JSONFieldError) {
        self.init(mode: try b.string("mode"), lensPosition: try b.double("lensPosition", in: 0...1), point: try readPoint(b))
        try b.finish()
    }
}

extension ExposureRequest: RequestBody {
    init(reading b: JSONObjectReader) throws(JSONFieldError) {
        self.init(mode: try b.string("mode"), duration: try b.double("duration"), iso: try b.double("iso"),
                  bias: try b.double("bias"), point: try readPoint(b))
        try b.finish()
    }
}

extension WhiteBalanceRequest: RequestBody {
    init(reading b: JSONObjectReader) throws(JSONFieldError) {
        self.init(mode: try b.string("mode"), temperature: try b.double("temperature"))
        try b.finish()
    }
}

extension TorchRequest: RequestBody {
    init(reading b: JSONObjectReader) throws(JSONFieldError) {
        guard let mode = try b.string("mode", allowed: ["on", "off", "auto"]) else {
            throw JSONFieldError(path: "mode", problem: "required (on, off or auto)")
        }
        self.init(mode: mode, level: try b.double("level", in: 0...1))
        try b.finish()
    }
}

extension OrientationRequest: RequestBody {
    init(reading b: JSONObjectReader) throws(JSONFieldError) {
        guard let rotation = try b.int("rotation") else {
            throw JSONFieldError(path: "rotation", problem: "required (0, 90, 180 or 270)")
        }
        guard [0, 90, 180, 270].contains(rotation) else {
            throw JSONFieldError(path: "rotation", problem: "\(rotation) is not 0, 90, 180 or 270")
        }
        self.init(rotation: rotation, mirrored: try b.bool("mirrored"))
        try b.finish()
    }
}

/// `"point": {"x": 0…1, "y": 0…1}` (normalized, (0,0) top-left); a point off the picture is refused.
private func readPoint(_ b: JSONObjectReader) throws(JSONFieldError) -> Point? {
    guard let p = try b.object("point") else { return nil }
    guard let x = try p.double("x", in: 0...1), let y = try p.double("y", in: 0...1) else {
        throw JSONFieldError(path: "point", problem: "needs x and y between 0 and 1")
    }
    try p.finish()
    return Point(x: x, y: y)
}

/// `{"types": [...], "rectOfInterest"?: {x, y, width, height} | null}`.
struct MetadataBody: RequestBody {
    var types: [String]
    var rect: NormalizedRect?

    init(reading body: JSONObjectReader) throws(JSONFieldError) {
        types = try strings(body, "types")
        rect = try body.nullableObject("rectOfInterest").map { o throws(JSONFieldError) in
            let rect = NormalizedRect(x: try number(o, "x"), y: try number(o, "y"),
                                      width: try number(o, "width"), height: try number(o, "height"))
            try o.finish()
            return rect
        }
        try body.finish()
    }
}

/// `{"codes"?: [{type, value, x?, y?, size?}], "moving"?: bool, "walker"?: {after, duration, size?} | null}`:
/// what the synthetic camera's scene shows, and what is staged in it (each field that is
/// given replaces what was; a walker's `after` counts from the call).
struct SceneBody: RequestBody {
    var codes: [SceneCode]?
    var moving: Bool?
    /// .some(nil): the walker is called off.
    var walker: (after: Double, duration: Double, size: Double)??

    init(reading body: JSONObjectReader) throws(JSONFieldError) {
        codes = try body.any("codes", expected: "a list of codes").map { v throws(JSONFieldError) in try sceneCodes(v, path: "codes") }
        moving = try body.bool("moving")
        if body.contains("walker") {  // null: called off
            walker = .some(try body.nullableObject("walker").map { w throws(JSONFieldError) in
                guard let duration = try w.double("duration", in: 0.1...3600) else {
                    throw JSONFieldError(path: "walker.duration", problem: "required: seconds to cross the picture (0.1…3600)")
                }
                let walker = (after: try w.double("after", in: 0...3600) ?? 0, duration: duration,
                              size: try w.double("size", in: 0.05...1) ?? 0.5)
                try w.finish()
                return walker
            })
        }
        try body.finish()
    }
}

/// `[{type, value, x, y, size}]`, as the scene call and `cameras[].codes` spell them.
func sceneCodes(_ value: JSONValue?, path: String) throws(JSONFieldError) -> [SceneCode] {
    guard let value else { throw JSONFieldError(path: path, problem: "required (a list; [] clears the scene)") }
    guard case .array(let items) = value else { throw JSONFieldError(path: path, problem: "expected a list, found \(value.typeName)") }
    var codes: [SceneCode] = []
    for (i, item) in items.enumerated() {
        let o = try JSONObjectReader(item, path: "\(path)[\(i)]", nullIsAbsent: false)
        guard let name = try o.string("type") else { throw JSONFieldError(path: "\(path)[\(i)].type", problem: "required") }
        guard let type = MetadataObjectType(rawValue: name) else {
            throw JSONFieldError(path: "\(path)[\(i)].type", problem: "unknown type '\(name)'")
        }
        guard let text = try o.string("value") else { throw JSONFieldError(path: "\(path)[\(i)].value", problem: "required") }
        codes.append(SceneCode(type: type, value: text, x: try o.double("x") ?? 0.5, y: try o.double("y") ?? 0.5,
                               size: try o.double("size") ?? 0.3))
        try o.finish()
    }
    return codes
}

private func strings(_ o: JSONObjectReader, _ key: String) throws(JSONFieldError) -> [String] {
    guard let v = o.value(key) else { throw JSONFieldError(path: key, problem: "required (a list; [] turns detection off)") }
    guard case .array(let items) = v else { throw JSONFieldError(path: key, problem: "expected a list of names, found \(v.typeName)") }
    var out: [String] = []
    for (i, item) in items.enumerated() {
        guard case .string(let s) = item else { throw JSONFieldError(path: "\(key)[\(i)]", problem: "expected a string, found \(item.typeName)") }
        out.append(s)
    }
    return out
}

private func number(_ o: JSONObjectReader, _ key: String) throws(JSONFieldError) -> Double {
    guard let d = try o.double(key) else { throw JSONFieldError(path: o.path.isEmpty ? key : "\(o.path).\(key)", problem: "required") }
    return d
}

/// `{"brightness": 200, "horizontal_flip": true}`: whole numbers or booleans by control key.
func controlValues(_ request: Request) throws(HTTPError) -> [String: Int] {
    let empty = HTTPError(400, "invalid_value", "Name at least one control, e.g. {\"brightness\": 128}.")
    guard request.body.contains(where: { $0 > 0x20 }) else { throw empty }
    guard let parsed = try? JSONValue.parse(request.body) else {
        throw HTTPError(400, "invalid_json", "The body is not valid JSON; send an object such as {\"brightness\": 128}.")
    }
    guard case .object(let fields) = parsed else { throw HTTPError(400, "invalid_json", "The body must be a JSON object.") }
    guard !fields.isEmpty else { throw empty }
    return try controlValues(fields)
}

/// The controls of a `/api/session/controls` body (a saved state's `controls` part too).
func controlValues(_ fields: [String: JSONValue]) throws(HTTPError) -> [String: Int] {
    var out: [String: Int] = [:]
    for (key, value) in fields {
        switch value {
        case .bool(let b): out[key] = b ? 1 : 0
        // V4L2's control values are 32-bit (struct v4l2_control).
        case .number(let n) where n == n.rounded() && n >= Double(Int32.min) && n <= Double(Int32.max): out[key] = Int(n)
        default: throw HTTPError(400, "invalid_value", "\(key): expected a whole number within \(Int32.min)…\(Int32.max) or a boolean, found \(value.typeName)")
        }
    }
    return out
}

/// `{quality?, store?}` in the body, each overridden by the query's `?quality=` and `?store=`.
struct CaptureOptions {
    var quality: Int?
    var store = false

    init(_ request: Request) throws(HTTPError) {
        let b = try bodyObject(request)
        do throws(JSONFieldError) {
            quality = try b.int("quality", in: 1...100)
            store = try b.bool("store") ?? false
            try b.finish()
        } catch { throw HTTPError(400, "invalid_value", error.description) }
        if let q = request.query["quality"] {
            guard let v = Int(q), (1...100).contains(v) else { throw HTTPError(400, "invalid_value", "quality: '\(q)' is not a whole number in 1…100") }
            quality = v
        }
        if let s = request.query["store"] {
            switch s {
            case "", "1", "true": store = true
            case "0", "false": store = false
            default: throw HTTPError(400, "invalid_value", "store: '\(s)' is not true or false")
            }
        }
    }
}

/// `{maxDuration?, maxBytes?, codec?, audio?, timelapse?: {interval | trigger: "api", fps?}}`.
extension RecordingOptions: RequestBody {
    init(reading body: JSONObjectReader) throws(JSONFieldError) {
        var o = RecordingOptions()
        if let d = try body.double("maxDuration") {
            guard d > 0 else { throw JSONFieldError(path: "maxDuration", problem: "must be more than 0 seconds") }
            o.maxDuration = d
        }
        if let b = try body.double("maxBytes") {
            // At most 2^52, where every whole number is still exact in a JSON reader's double.
            guard b == b.rounded(), b >= 65536, b <= 4_503_599_627_370_496 else {
                throw JSONFieldError(path: "maxBytes", problem: "must be a whole number of bytes within 65536…4503599627370496 (2^52)")
            }
            o.maxBytes = Int64(b)
        }
        if let c = try body.string("codec", allowed: MovieCodec.allCases.map(\.rawValue)) { o.codec = MovieCodec(rawValue: c)! }
        if let a = try body.bool("audio") { o.audio = a }
        if let t = try body.object("timelapse") {
            let fps = try t.double("fps") ?? 30
            guard (1...120).contains(fps) else { throw JSONFieldError(path: "timelapse.fps", problem: "must be within 1…120") }
            let trigger = try t.string("trigger", allowed: ["interval", "api"]).flatMap(Timelapse.Trigger.init(rawValue:))
            let interval = try t.double("interval")
            guard let kind = trigger ?? (interval == nil ? nil : .interval) else {
                throw JSONFieldError(path: "timelapse", problem: "needs \"interval\" (seconds between frames) or \"trigger\": \"api\"")
            }
            switch (kind, interval) {
            case (.api, nil):
                o.timelapse = Timelapse(trigger: .api, interval: nil, fps: fps)
            case (.api, _?):
                throw JSONFieldError(path: "timelapse.interval", problem: "a timelapse triggered by the API has no interval")
            case (.interval, let i?):
                guard i > 0, i <= 86400 else { throw JSONFieldError(path: "timelapse.interval", problem: "must be within 0…86400 seconds") }
                o.timelapse = Timelapse(trigger: .interval, interval: i, fps: fps)
            case (.interval, nil):
                throw JSONFieldError(path: "timelapse.interval", problem: "seconds between frames are needed")
            }
            try t.finish()
        }
        try body.finish()
        self = o
    }
}

/// `{"active": true|false}`: the recording switch.
struct RecordingSwitch: RequestBody {
    var active: Bool
    init(reading body: JSONObjectReader) throws(JSONFieldError) {
        guard let active = try body.bool("active") else { throw JSONFieldError(path: "active", problem: "required: true (record) or false (stop)") }
        self.active = active
        try body.finish()
    }
}

/// `{"delay"?: seconds (0…60, default 0.5), "set"?: name}`: a synchronized capture across the fleet.
struct FleetBody: RequestBody {
    var delay = 0.5
    var set: String?
    init(reading body: JSONObjectReader) throws(JSONFieldError) {
        delay = try body.double("delay", in: 0...60) ?? delay
        set = try body.string("set")
        if let set, !Configuration.MQTTSettings.isSafeName(set) {
            throw JSONFieldError(path: "set", problem: "letters, digits, '_' and '-' only, at most 64")
        }
        try body.finish()
    }
}
