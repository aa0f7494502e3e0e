// Why a session call was refused. Each case maps to one HTTP status and code in the app.

import CameraCore

public enum SessionError: Error, Sendable, Equatable {
    case unknownCamera(String, known: [String])
    /// The camera cannot do it; `supported` lists what it can.
    case unsupported(String, supported: [String])
    case invalidValue(String)
    case notRunning
    /// The device failed to start or went away.
    case cameraFailed(String)
    case captureTimeout
    /// The camera has no torch (`hasTorch` false).
    case torchUnavailable
}
