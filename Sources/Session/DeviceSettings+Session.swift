// The device's settings as the session reads them: which parts are the session's own (the
// device reads back the rest), and which changes are worth a state event.

import CameraCore

extension DeviceSettings {
    /// The device's values with the session's own parts kept: the zoom factor, its digital part,
    /// range and centre, and the orientation are the session's, not the device's.
    func keepingSessionParts(of session: DeviceSettings) -> DeviceSettings {
        var s = self
        s.zoom.factor = session.zoom.factor
        s.zoom.digital = session.zoom.digital
        s.zoom.min = session.zoom.min
        s.zoom.max = session.zoom.max
        s.zoom.center = session.zoom.center
        s.orientation = session.orientation
        return s
    }

    /// True when a mode, the lens zoom, or a value no automatic mode is moving differs.
    func differsBeyondAutomaticDrift(from o: DeviceSettings) -> Bool {
        if zoom.optical != o.zoom.optical || focus.mode != o.focus.mode || exposure.mode != o.exposure.mode
            || whiteBalance.mode != o.whiteBalance.mode || torch != o.torch || exposure.bias != o.exposure.bias
            || controls != o.controls { return true }
        if focus.mode == .locked && focus.lensPosition != o.focus.lensPosition { return true }
        if exposure.mode != .auto && exposure.mode != .continuous && (exposure.duration != o.exposure.duration || exposure.iso != o.exposure.iso) { return true }
        if whiteBalance.mode == .locked && whiteBalance.temperature != o.whiteBalance.temperature { return true }
        return false
    }
}
