// The one place where errors become answers. Handlers throw; the server maps what they throw
// at dispatch through `errorBody`, the contract's envelope {"error": {"code", "message", ...}}.
// Session, camera, JSON-field, scene and sign-in errors each conform to ResponseError here
// (the HTTP status and the contract's code are the application's vocabulary, not the domain's).

import Barcodes
import CameraCore
import Glibc
import HTTPServer
import JSON
import Movie
import Session
import Streaming

/// The contract's error body for any error the server answers, its own refusals included
/// (a malformed head is the contract's `invalid_value`; an overloaded or stopping server is
/// `camera_unavailable`, as every 503 of the API is).
@Sendable func errorBody(_ e: any ResponseError) -> Response {
    var code = e.code
    if let s = e as? ServerRefusal {
        switch s {
        case .badRequest: code = "invalid_value"
        case .unavailable: code = "camera_unavailable"
        default: break
        }
    }
    var fields = e.extra
    fields["code"] = .string(code)
    fields["message"] = .string(e.message)
    let body = JSONValue.object(["error": .object(fields)]).encoded()
    return Response(status: e.status, headers: [("Content-Type", "application/json")] + e.headers, body: .bytes(body))
}

/// What a session call can answer instead of a state, as the contract answers it.
extension SessionError: ResponseError {
    public var status: Int { http.status }
    public var code: String { http.code }
    public var message: String { http.message }
    public var extra: [String: JSONValue] { http.extra }

    var http: HTTPError {
        switch self {
        case .unknownCamera(let id, let known):
            HTTPError(404, "unknown_camera", "No camera '\(id)'. Known cameras: \(known.joined(separator: ", ")).",
                      extra: ["cameras": .array(known.map { .string($0) })])
        case .unsupported(let what, let supported):
            HTTPError(422, "unsupported", "The camera does not support \(what).",
                      extra: ["supported": .array(supported.map { .string($0) })])
        case .invalidValue(let m):
            HTTPError(400, "invalid_value", m)
        case .notRunning:
            HTTPError(409, "session_not_running", "The session is not running; POST /api/session/start first.")
        case .camera(.refused(let control, let value, let errno)):
            // EACCES/EBUSY/EILSEQ: the control is locked by the camera's state (an automatic
            // mode on); anything else: a value it does not take.
            HTTPError([EACCES, EBUSY, EILSEQ, EPERM].contains(errno) ? 409 : 422, "control_refused",
                      "The camera refused \(control)=\(value): \(String(cString: strerror(errno))).",
                      extra: ["control": .string(control), "value": .number(Double(value))])
        case .camera(let cause) where cause.isOutOfBandwidth, .switchFailed(_, let cause) where cause.isOutOfBandwidth:
            // Two webcams on one USB 2 bus: uvcvideo reserves isochronous bandwidth at
            // STREAMON and the host controller has none left.
            HTTPError(503, "camera_unavailable",
                      "The USB bus has no bandwidth left for this camera (\(cause.description)): another camera on the same bus holds it. Choose a smaller size or a lower frame rate, MJPEG instead of YUYV, or plug the camera into another USB controller.",
                      extra: ["reason": .string("usb_bandwidth")])
        case .camera(let cause):
            HTTPError(503, "camera_unavailable", "The camera could not be used: \(cause.description)")
        case .switchFailed(let id, let cause):
            HTTPError(503, "camera_unavailable", "Camera '\(id)' could not be started (still on the previous one): \(cause.description)",
                      extra: ["camera": .string(id)])
        case .captureTimeout:
            HTTPError(504, "capture_timeout", "No frame arrived in time.")
        case .torchUnavailable:
            HTTPError(409, "torch_unavailable", "This camera has no torch (hasTorch is false).")
        case .alreadyRecording:
            HTTPError(409, "already_recording", "This camera is recording already; POST …/recording/stop first.")
        case .notRecording:
            HTTPError(409, "not_recording", "This camera is not recording; POST …/recording/start first.")
        case .notAPITimelapse:
            HTTPError(409, "not_api_timelapse", "Frames on request need a timelapse started with {\"timelapse\": {\"trigger\": \"api\"}}.")
        case .recordingUnavailable(let cause):
            HTTPError(503, "storage_unavailable", "The movie could not be started: \(cause.description)",
                      extra: cause.isStorageFull ? ["reason": .string("disk_full")] : [:])
        }
    }
}

/// A WebRTC offer (WHEP's or WHIP's) that could not be answered.
extension StreamingError: ResponseError {
    public var status: Int { http.status }
    public var code: String { http.code }
    public var message: String { http.message }
    public var headers: [(String, String)] { http.headers }

    var http: HTTPError {
        switch self {
        case .malformedOffer(let m): HTTPError(400, "invalid_sdp", "The offer is not an SDP offer this server can answer: \(m).")
        case .noH264(let m): HTTPError(422, "unsupported_codec", "The offer has no codec this server sends: \(m).")
        case .noOpus(let m): HTTPError(422, "unsupported_codec", "The offer has no sound this server can play: \(m).")
        case .noFreePort(let r): HTTPError(503, "no_free_port", "Every port of webrtc.udpPorts (\(r.lowerBound)–\(r.upperBound)) is held by a WebRTC peer; try again once one ends, or widen the range.",
                                           headers: [("Retry-After", "5")])
        case .badFragment(let e): HTTPError(400, "invalid_sdpfrag", e.description)
        case .unusableFragment(let m): HTTPError(422, "unusable_candidates", m)
        case .iceRestart: HTTPError(422, "ice_restart_unsupported", "An ICE restart is not offered by this server: end the session and open a new one (POST the offer again).")
        case .unavailable, .listen, .peer: HTTPError(500, "webrtc_failed", "WebRTC could not start: \(self).")
        }
    }
}

/// A WHIP talk that did not begin: the camera's speaker refused, or the offer.
extension TalkRefusal: ResponseError {
    var status: Int { http.status }
    var code: String { http.code }
    var message: String { http.message }

    var http: HTTPError {
        switch self {
        case .offer(let e): e.http
        case .speaker(.none(let camera)):
            HTTPError(422, "unsupported", "Camera \(camera) has no speaker to talk through (cameras[].speaker).")
        case .speaker(.busy(let camera)):
            HTTPError(409, "talk_busy", "Someone is talking to camera \(camera); one talker at a time.")
        case .speaker(.unavailable(let camera, let device, let why)):
            HTTPError(503, "speaker_unavailable", "Camera \(camera)'s speaker \(device) cannot play: \(why).")
        }
    }
}

/// A field of a request body with the wrong type, range or name.
extension JSONFieldError: ResponseError {
    public var status: Int { 400 }
    public var code: String { "invalid_value" }
    public var message: String { description }
}

/// The photo store's failure: the photo was taken, but not kept.
extension PhotoStoreError: ResponseError {
    public var status: Int { 500 }
    public var code: String { "storage_failed" }
    public var message: String { "The photo could not be stored: \(cause)" }
}

/// A camera's failure outside a session call answers as the session would answer it.
extension CameraError: ResponseError {
    public var status: Int { SessionError.camera(self).status }
    public var code: String { SessionError.camera(self).code }
    public var message: String { SessionError.camera(self).message }
    public var extra: [String: JSONValue] { SessionError.camera(self).extra }
}

/// A scene code the synthetic camera cannot draw: a type it has no drawing for (422, with
/// what it can draw), a value that type cannot hold (400), or the library failed (500).
extension SymbolError: ResponseError {
    public var status: Int {
        switch self {
        case .unsupported: 422
        case .invalidValue: 400
        case .library: 500
        }
    }
    public var code: String {
        switch self {
        case .unsupported: "unsupported"
        case .invalidValue: "invalid_value"
        case .library: "internal_error"
        }
    }
    public var message: String { description }
    public var extra: [String: JSONValue] {
        guard case .unsupported = self else { return [:] }
        return ["supported": .array(Symbol.drawable.map { .string($0.rawValue) })]
    }
}

extension CameraError {
    /// STREAMON answered ENOSPC: the USB host controller cannot give the camera the
    /// bandwidth its format needs.
    var isOutOfBandwidth: Bool {
        if case .system(let e) = self { return e.errno == ENOSPC }
        return false
    }
}
