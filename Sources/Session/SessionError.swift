// What a session call can answer instead of a state. Errors keep their cause: a camera's
// failure travels as the CameraError it was (with the errno and the call that left it).

import CameraCore
import Movie

public enum SessionError: Error, Sendable, Equatable {
    case unknownCamera(String, known: [String])
    /// The camera cannot do it; `supported` lists what it can.
    case unsupported(String, supported: [String])
    case invalidValue(String)
    case notRunning
    /// The device failed, refused a control or went away.
    case camera(CameraError)
    /// Switching to camera `id` failed (the session stayed on the old one); `cause` is why.
    case switchFailed(id: String, cause: CameraError)
    case captureTimeout
    /// The camera has no torch (`hasTorch` false).
    case torchUnavailable
    /// The session records already (one movie at a time per camera).
    case alreadyRecording
    case notRecording
    /// `recording/frame` needs a timelapse started with `"trigger": "api"`.
    case notAPITimelapse
    /// The movie file could not be created (the directory, the disk, the encoder).
    case recordingUnavailable(MovieError)
}

extension SessionError {
    /// A camera's own controls' error: a key it lacks is named with the keys it has.
    init(controlError e: CameraError) {
        if case .unsupportedControl(let k, let known) = e { self = .unsupported("control '\(k)'", supported: known) } else { self = .camera(e) }
    }
}
