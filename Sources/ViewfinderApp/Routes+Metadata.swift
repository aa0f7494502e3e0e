// The metadata output over HTTP: which codes each session looks for, and the synthetic
// camera's scene, where a test (or a demo) puts the codes to find.

import Barcodes
import CameraCore
import Capture
import HTTPServer
import Session
import JSON

extension Application {
    func addMetadataRoutes(_ r: inout Router, _ prefix: String, _ lookup: @escaping SessionLookup) {
        r.post(prefix + "/metadata") { [self] request in
            await sessionCall(request) { body throws(SessionError) in
                let types: [String], rect: NormalizedRect?
                do throws(JSONFieldError) {
                    types = try Self.strings(body, "types")
                    rect = try body.nullableObject("rectOfInterest").map { o throws(JSONFieldError) in
                        let rect = NormalizedRect(x: try Self.number(o, "x"), y: try Self.number(o, "y"),
                                                  width: try Self.number(o, "width"), height: try Self.number(o, "height"))
                        try o.finish()
                        return rect
                    }
                    try body.finish()
                } catch { throw .invalidValue(error.description) }
                return try await lookup(request).setMetadata(types: types, rectOfInterest: rect)
            }
        }
    }

    /// `GET|POST /api/cameras/{id}/scene`: the codes a synthetic camera shows.
    func addSceneRoutes(_ r: inout Router) {
        r.get("/api/cameras/:id/scene") { [self] request in
            do throws(HTTPError) { return json(["codes": try syntheticCamera(request).sceneCodes]) } catch { return error.response }
        }
        r.post("/api/cameras/:id/scene") { [self] request in
            do throws(HTTPError) {
                let camera = try syntheticCamera(request)
                let body = try bodyObject(request)
                let codes: [SceneCode]
                do throws(JSONFieldError) { codes = try Self.sceneCodes(body.value("codes"), path: "codes"); try body.finish() } catch {
                    throw error.http
                }
                do throws(SymbolError) { try camera.setSceneCodes(codes) } catch {
                    if case .unsupported = error {
                        throw HTTPError(422, "unsupported", error.description,
                                        extra: ["supported": .array(Symbol.drawable.map { .string($0.rawValue) })])
                    }
                    throw HTTPError(400, "invalid_value", error.description)
                }
                return json(["codes": camera.sceneCodes])
            } catch { return error.response }
        }
    }

    private func syntheticCamera(_ request: Request) throws(HTTPError) -> SyntheticCamera {
        let id = request.parameters["id"] ?? ""
        let session: CaptureSession
        do throws(SessionError) { session = try cameras.session(id) } catch { throw error.http }
        guard let camera = session.cameras.first(where: { $0.descriptor.id == id }) as? SyntheticCamera else {
            throw HTTPError(409, "not_synthetic", "Camera '\(id)' is not synthetic: only the synthetic camera's scene can be set.")
        }
        return camera
    }

    static func strings(_ o: JSONObjectReader, _ key: String) throws(JSONFieldError) -> [String] {
        guard let v = o.value(key) else { throw JSONFieldError(path: key, problem: "required (a list; [] turns detection off)") }
        guard case .array(let items) = v else { throw JSONFieldError(path: key, problem: "expected a list of names, found \(v.typeName)") }
        var out: [String] = []
        for (i, item) in items.enumerated() {
            guard case .string(let s) = item else { throw JSONFieldError(path: "\(key)[\(i)]", problem: "expected a string, found \(item.typeName)") }
            out.append(s)
        }
        return out
    }

    static func number(_ o: JSONObjectReader, _ key: String) throws(JSONFieldError) -> Double {
        guard let d = try o.double(key) else { throw JSONFieldError(path: o.path.isEmpty ? key : "\(o.path).\(key)", problem: "required") }
        return d
    }

    /// `[{type, value, x, y, size}]`, as the scene call and `cameras[].codes` spell them.
    static func sceneCodes(_ value: JSONValue?, path: String) throws(JSONFieldError) -> [SceneCode] {
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
}
