// The one place where domain errors become HTTP errors (status + contract code).

import CameraCore
import Glibc
import HTTPServer
import Movie
import Session
import JSON

extension SessionError {
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

extension JSONFieldError {
    var http: HTTPError { HTTPError(400, "invalid_value", description) }
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

extension CameraError {
    /// STREAMON answered ENOSPC: the USB host controller cannot give the camera the
    /// bandwidth its format needs.
    var isOutOfBandwidth: Bool {
        if case .system(let e) = self { return e.errno == ENOSPC }
        return false
    }
}
