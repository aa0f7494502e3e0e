// The device-setting calls and the photo output: parse and type-check the body here, let
// the session check it against the camera, answer SessionState or a contract error.

import CameraCore
import Foundation
import HTTPServer
import Session
import SystemSupport
import JSON

extension Application {
    func addSettingRoutes(_ r: inout Router, _ prefix: String, _ lookup: @escaping SessionLookup) {
        r.post(prefix + "/zoom") { [self] request in
            await sessionCall(request) { b throws(SessionError) in
                let session = try lookup(request)
                let z = try fields(b) { b throws(JSONFieldError) in
                    guard let factor = try b.double("factor") else {
                        throw JSONFieldError(path: "factor", problem: "required (the zoom factor, e.g. 2.0)")
                    }
                    return ZoomRequest(factor: factor, rate: try b.double("rate"))
                }
                return try await session.zoom(z)
            }
        }
        r.post(prefix + "/focus") { [self] request in
            await sessionCall(request) { b throws(SessionError) in
                let session = try lookup(request)
                let f = try fields(b) { b throws(JSONFieldError) in
                    FocusRequest(mode: try b.string("mode"), lensPosition: try b.double("lensPosition", in: 0...1), point: try point(b))
                }
                return try await session.focus(f)
            }
        }
        r.post(prefix + "/exposure") { [self] request in
            await sessionCall(request) { b throws(SessionError) in
                let session = try lookup(request)
                let e = try fields(b) { b throws(JSONFieldError) in
                    ExposureRequest(mode: try b.string("mode"), duration: try b.double("duration"), iso: try b.double("iso"),
                                    bias: try b.double("bias"), point: try point(b))
                }
                return try await session.exposure(e)
            }
        }
        r.post(prefix + "/white-balance") { [self] request in
            await sessionCall(request) { b throws(SessionError) in
                let session = try lookup(request)
                let w = try fields(b) { b throws(JSONFieldError) in
                    WhiteBalanceRequest(mode: try b.string("mode"), temperature: try b.double("temperature"))
                }
                return try await session.whiteBalance(w)
            }
        }
        r.post(prefix + "/torch") { [self] request in
            await sessionCall(request) { b throws(SessionError) in
                let session = try lookup(request)
                let t = try fields(b) { b throws(JSONFieldError) in
                    guard let mode = try b.string("mode", allowed: ["on", "off", "auto"]) else {
                        throw JSONFieldError(path: "mode", problem: "required (on, off or auto)")
                    }
                    return TorchRequest(mode: mode, level: try b.double("level", in: 0...1))
                }
                return try await session.torch(t)
            }
        }
        r.post(prefix + "/orientation") { [self] request in
            await sessionCall(request) { b throws(SessionError) in
                let session = try lookup(request)
                let o = try fields(b) { b throws(JSONFieldError) in
                    guard let rotation = try b.int("rotation") else {
                        throw JSONFieldError(path: "rotation", problem: "required (0, 90, 180 or 270)")
                    }
                    guard [0, 90, 180, 270].contains(rotation) else {
                        throw JSONFieldError(path: "rotation", problem: "\(rotation) is not 0, 90, 180 or 270")
                    }
                    return OrientationRequest(rotation: rotation, mirrored: try b.bool("mirrored"))
                }
                return try await session.orientation(o)
            }
        }

        r.get(prefix + "/controls") { request in
            do throws(SessionError) { return json(["controls": try await lookup(request).controls()]) } catch { return error.http.response }
        }
        r.post(prefix + "/controls") { request in
            let values: [String: Int]
            do throws(HTTPError) { values = try controlValues(request) } catch { return error.response }
            do throws(SessionError) {
                return json(["controls": try await lookup(request).setControls(values)])
            } catch { return error.http.response }
        }

        r.post(prefix + "/capture") { [self] request in await capture(request, lookup) }
    }

    /// Photos from every camera, each recording the camera that took it.
    func addPhotoRoutes(_ r: inout Router) {
        r.get("/api/photos") { [self] _ in json(["photos": photos.list().map(PhotoJSON.init)]) }
        r.get("/api/photos/:id") { [self] request in
            let id = request.parameters["id"] ?? ""
            guard let bytes = photos.read(id) else { return unknownPhoto(id) }
            return Response(status: 200, contentType: "image/jpeg", bytes: bytes,
                            headers: [("Cache-Control", "private, max-age=31536000, immutable")])
        }
        r.delete("/api/photos/:id") { [self] request in
            let id = request.parameters["id"] ?? ""
            guard photos.delete(id) else { return unknownPhoto(id) }
            return Response(status: 204)
        }
    }

    /// POST …/capture: options in the body or the query (`quality`, `store`).
    func capture(_ request: Request, _ lookup: SessionLookup) async -> Response {
        var session: CaptureSession
        do throws(SessionError) { session = try lookup(request) } catch { return error.http.response }
        var quality: Int?, store = false
        do throws(HTTPError) {
            let b = try bodyObject(request)
            do throws(JSONFieldError) {
                quality = try b.int("quality", in: 1...100)
                store = try b.bool("store") ?? false
                try b.finish()
            } catch { throw error.http }
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
        } catch { return error.response }

        // A prepare or switch that replaces the pipeline answers its waiting photos with no
        // frame at once; the session is then running again at the new format (after a
        // switch, the main session is another camera's: looked up again), so the photo is
        // asked again (the soak caught a 504 here, 7 ms after the request). Only a wait
        // that ran out is a timeout.
        let deadline = Clock.monotonic() + 5
        var taken: EncodedFrame?
        while taken == nil, Clock.monotonic() < deadline {
            let ticket: CaptureTicket
            do throws(SessionError) {
                session = try lookup(request)
                ticket = try await session.capture(quality: quality)
            } catch { return error.http.response }
            taken = await ticket.frame(timeout: max(0.1, deadline - Clock.monotonic()))
        }
        guard let frame = taken else { return SessionError.captureTimeout.http.response }
        let headers = [("X-Frame-Sequence", String(frame.sequence)), ("X-Capture-Timestamp", frame.timestampString)]
        guard store else {
            return Response(status: 200, contentType: "image/jpeg", bytes: frame.jpeg, headers: headers + Response.noCache)
        }
        do {
            let info = try photos.save(frame, camera: session.id)
            await session.announcePhoto(info)
            let photo = PhotoJSON(info)
            return json(photo, status: 201, headers: [("Location", photo.url)] + headers)
        } catch {
            return HTTPError(500, "storage_failed", "The photo could not be stored: \(error)").response
        }
    }

    private func unknownPhoto(_ id: String) -> Response {
        HTTPError(404, "unknown_photo", "No photo '\(id)'; GET /api/photos lists them.").response
    }
}

/// A stored photo as the API shows it: the store's record plus where to fetch it.
struct PhotoJSON: Encodable {
    var id: String, url: String, bytes: Int, width: Int, height: Int, capturedAt: String
    var camera: String?

    init(_ p: PhotoInfo) {
        id = p.id; url = "/api/photos/\(p.id)"; bytes = p.bytes; width = p.width; height = p.height; capturedAt = p.capturedAt
        camera = p.camera
    }

    func encode(to encoder: Encoder) throws {
        enum K: String, CodingKey { case id, url, bytes, width, height, capturedAt, camera }
        var c = encoder.container(keyedBy: K.self)
        try c.encode(id, forKey: .id); try c.encode(url, forKey: .url); try c.encode(bytes, forKey: .bytes)
        try c.encode(width, forKey: .width); try c.encode(height, forKey: .height)
        try c.encode(capturedAt, forKey: .capturedAt)
        try c.encode(camera, forKey: .camera)  // null for a photo from before cameras were recorded
    }
}

/// Reads the body's fields and refuses unknown keys; type errors become 400 invalid_value.
private func fields<T>(_ b: JSONObjectReader, _ read: (JSONObjectReader) throws(JSONFieldError) -> T) throws(SessionError) -> T {
    do throws(JSONFieldError) {
        let value = try read(b)
        try b.finish()
        return value
    } catch { throw .invalidValue(error.description) }
}

/// `{"brightness": 200, "horizontal_flip": true}`: whole numbers or booleans by control key.
private func controlValues(_ request: Request) throws(HTTPError) -> [String: Int] {
    let empty = HTTPError(400, "invalid_value", "Name at least one control, e.g. {\"brightness\": 128}.")
    guard request.body.contains(where: { $0 > 0x20 }) else { throw empty }
    guard let parsed = try? JSONValue.parse(request.body) else {
        throw HTTPError(400, "invalid_json", "The body is not valid JSON; send an object such as {\"brightness\": 128}.")
    }
    guard case .object(let fields) = parsed else { throw HTTPError(400, "invalid_json", "The body must be a JSON object.") }
    guard !fields.isEmpty else { throw empty }
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

/// `"point": {"x": 0…1, "y": 0…1}` (normalized, (0,0) top-left); a point off the picture is refused.
private func point(_ b: JSONObjectReader) throws(JSONFieldError) -> Point? {
    guard let p = try b.object("point") else { return nil }
    guard let x = try p.double("x", in: 0...1), let y = try p.double("y", in: 0...1) else {
        throw JSONFieldError(path: "point", problem: "needs x and y between 0 and 1")
    }
    try p.finish()
    return Point(x: x, y: y)
}
