// Commands over MQTT are the HTTP API: `<prefix>/<node>/<camera>/<route>` with a JSON body is
// `POST /api/cameras/<camera>/<route>` with that body — the same router, the same
// validation, the same session call, the role `mqtt.role` in place of a signed-in user. The
// answer `{"status": <HTTP status>, "body": <the HTTP JSON>}` goes to the request's MQTT 5
// Response Topic with its Correlation Data; a request without one (Home Assistant speaks
// MQTT 3.1.1) runs unanswered.

import Auth
import Foundation
import HTTPServer
import JSON
import MQTT

struct MQTTCommands: Sendable {
    let topics: MQTTTopics
    let router: Router
    let access: AccessControl
    let role: Role
    /// Topic level → camera id.
    let cameras: [String: String]
    let maxBodyBytes: Int

    /// The request a message on a command topic stands for; nil for topics that are not
    /// commands (this host's own state, events and snapshots, another host's).
    func request(for message: MQTTMessage) -> Request? {
        guard message.topic.hasPrefix(topics.base + "/") else { return nil }
        let rest = message.topic.dropFirst(topics.base.count + 1)
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        let level = String(rest[..<slash])
        var route = String(rest[rest.index(after: slash)...])
        guard !MQTTTopics.published.contains(route), !route.isEmpty else { return nil }
        var query: [String: String] = [:]
        if let q = route.firstIndex(of: "?") {
            for pair in route[route.index(after: q)...].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                query[String(kv[0])] = kv.count > 1 ? String(kv[1]) : ""
            }
            route = String(route[..<q])
        }
        // A photo over MQTT is stored (the JPEG goes to …/snapshot): there is no body to carry it.
        if route == "session/capture" && query["store"] == nil { query["store"] = "true" }
        let camera = cameras[level] ?? level
        var r = Request(method: "POST", path: "/api/cameras/\(camera)/\(route)", query: query,
                        headers: ["content-type": "application/json"], body: message.payload)
        r.remoteAddress = "mqtt"
        r.principal = Principal(name: "mqtt", role: role.rawValue)
        return r
    }

    /// Runs the request as the HTTP server would; the status and the JSON body.
    func run(_ request: Request) async -> (status: Int, body: JSONValue) {
        var request = request
        if request.body.count > maxBodyBytes { return render(ServerRefusal.bodyTooLarge(limit: maxBodyBytes)) }
        if let needed = access.required(request), !role.allows(needed) {
            return render(SignInRefusal.forbidden("MQTT commands act as a \(role.rawValue) (mqtt.role); \(request.method) \(request.path) needs an operator."))
        }
        switch router.match(method: request.method, path: request.path) {
        case .notFound: return render(ServerRefusal.notFound(path: request.path))
        case .methodNotAllowed(let allow): return render(ServerRefusal.methodNotAllowed(method: request.method, allow: allow))
        case .found(let handler, let parameters):
            request.parameters = parameters
            do { return Self.decode(try await handler(request)) } catch let e as any ResponseError {
                return render(e)
            } catch {
                return render(ServerRefusal.internalError("The server failed to answer: \(error)"))
            }
        }
    }

    private func render(_ e: any ResponseError) -> (status: Int, body: JSONValue) { Self.decode(errorBody(e)) }

    /// A JSON body as JSON; anything else (a JPEG) as what it is.
    static func decode(_ r: Response) -> (status: Int, body: JSONValue) {
        guard case .bytes(let bytes) = r.body else { return (r.status, ["stream": true]) }
        if bytes.isEmpty { return (r.status, .null) }
        if let value = try? JSONValue.parse(bytes) { return (r.status, value) }
        let type = r.headers.first { $0.0.lowercased() == "content-type" }?.1 ?? "application/octet-stream"
        return (r.status, ["contentType": .string(type), "bytes": .number(Double(bytes.count))])
    }

    /// The answer to publish, if the request asked for one.
    static func answer(to message: MQTTMessage, status: Int, body: JSONValue) -> MQTTMessage? {
        guard let topic = message.responseTopic, !topic.isEmpty else { return nil }
        let payload = JSONValue.object(["status": .number(Double(status)), "body": body]).encoded()
        return MQTTMessage(topic: topic, payload: payload, qos: 1, correlationData: message.correlationData, contentType: "application/json")
    }
}
