// Each setting call's request checked against the camera's capabilities and turned into
// the settings to ask the device for. Pure functions: no device, no session, table-tested.

import CameraCore

public enum SettingsValidation {
    /// The zoom factor to go to (clamped, as apps clamp `videoZoomFactor`) and the ramp rate.
    public static func zoom(_ r: ZoomRequest, _ caps: ZoomCapability) throws(SessionError) -> (factor: Double, rate: Double?) {
        if let rate = r.rate, !(rate > 0) { throw .invalidValue("rate must be positive (zoom doublings per second)") }
        guard r.factor > 0 else { throw .invalidValue("factor must be positive") }
        if let c = r.center { try center(c) }
        return (caps.clamp(r.factor), r.rate)
    }

    /// A crop centre: within the frame.
    public static func center(_ c: Point) throws(SessionError) {
        guard (0...1).contains(c.x), (0...1).contains(c.y) else {
            throw .invalidValue("center must have x and y between 0 and 1 (got \(c.x), \(c.y))")
        }
    }

    /// A continuous move: finite speeds, and an end.
    public static func move(_ m: MoveRequest) throws(SessionError) {
        guard m.velocity.x.isFinite, m.velocity.y.isFinite, m.zoomRate.isFinite else {
            throw .invalidValue("a move's velocity and zoom rate must be numbers")
        }
        guard m.duration >= 0, m.duration.isFinite else { throw .invalidValue("a move's duration must be seconds, 0 or more (got \(m.duration))") }
    }

    /// A factor routed once: the lens up to its range, the crop only beyond it.
    public static func zoomParts(_ factor: Double, _ caps: ZoomCapability) -> (optical: Double, digital: Double) {
        let optical = min(max(factor, 1), caps.opticalMax)
        return (optical, max(1, factor / caps.opticalMax))
    }

    /// The settings for a focus request, and whether it asks for an autofocus run.
    public static func focus(_ r: FocusRequest, _ caps: Capabilities, _ current: DeviceSettings) throws(SessionError) -> (DeviceSettings, runAutoFocus: Bool) {
        var s = current
        guard let name = r.mode ?? (r.lensPosition != nil ? FocusMode.locked.rawValue : nil) else {
            throw .invalidValue("mode is required (\(names(caps.focusModes)))")
        }
        guard let mode = FocusMode(rawValue: name), caps.focusModes.contains(mode) else {
            throw .unsupported("focus mode '\(name)'", supported: caps.focusModes.map(\.rawValue))
        }
        if let lens = r.lensPosition {
            guard caps.lensPosition else { throw .unsupported("lensPosition", supported: []) }
            guard mode == .locked else { throw .invalidValue("lensPosition applies to locked focus") }
            s.focus.lensPosition = min(max(lens, 0), 1)
        }
        if let p = r.point {
            guard caps.focusPointOfInterest else { throw .unsupported("a focus point of interest", supported: []) }
            s.focus.point = clamp(p)
        }
        s.focus.mode = mode
        return (s, mode == .auto)
    }

    public static func exposure(_ r: ExposureRequest, _ caps: Capabilities, _ current: DeviceSettings) throws(SessionError) -> DeviceSettings {
        var s = current
        let implied = r.duration != nil || r.iso != nil ? ExposureMode.custom.rawValue
            : (r.bias != nil || r.point != nil ? current.exposure.mode.rawValue : nil)
        guard let name = r.mode ?? implied else { throw .invalidValue("mode is required (\(names(caps.exposureModes)))") }
        guard let mode = ExposureMode(rawValue: name), caps.exposureModes.contains(mode) else {
            throw .unsupported("exposure mode '\(name)'", supported: caps.exposureModes.map(\.rawValue))
        }
        // Custom sets them; a lock holds them (without them, what the device has now: a lock
        // saved and replayed after a restart holds what it held).
        if r.duration != nil || r.iso != nil {
            guard mode == .custom || mode == .locked else { throw .invalidValue("duration and iso apply to custom or locked exposure") }
        }
        s.exposure.duration = try clamp(r.duration, to: caps.exposureDuration, "exposure duration") ?? s.exposure.duration
        s.exposure.iso = try clamp(r.iso, to: caps.iso, "ISO") ?? s.exposure.iso
        s.exposure.bias = try clamp(r.bias, to: caps.exposureBias, "exposure bias") ?? s.exposure.bias
        if let p = r.point {
            guard caps.exposurePointOfInterest else { throw .unsupported("an exposure point of interest", supported: []) }
            s.exposure.point = clamp(p)
        }
        s.exposure.mode = mode
        if r.duration != nil || r.iso != nil { s.exposure.held = true }
        else if mode != .locked { s.exposure.held = false }
        return s
    }

    public static func whiteBalance(_ r: WhiteBalanceRequest, _ caps: Capabilities, _ current: DeviceSettings) throws(SessionError) -> DeviceSettings {
        var s = current
        guard let name = r.mode ?? (r.temperature != nil ? WhiteBalanceMode.locked.rawValue : nil) else {
            throw .invalidValue("mode is required (\(names(caps.whiteBalanceModes)))")
        }
        guard let mode = WhiteBalanceMode(rawValue: name), caps.whiteBalanceModes.contains(mode) else {
            throw .unsupported("white balance mode '\(name)'", supported: caps.whiteBalanceModes.map(\.rawValue))
        }
        if r.temperature != nil && mode != .locked { throw .invalidValue("a temperature locks white balance; use mode locked") }
        s.whiteBalance.temperature = try clamp(r.temperature, to: caps.whiteBalanceTemperature,
                                               "a white balance temperature") ?? s.whiteBalance.temperature
        s.whiteBalance.mode = mode
        return s
    }

    public static func torch(_ r: TorchRequest, _ caps: Capabilities, _ current: DeviceSettings) throws(SessionError) -> DeviceSettings {
        guard caps.torch else { throw .torchUnavailable }
        guard let mode = TorchMode(rawValue: r.mode) else { throw .invalidValue("torch mode must be on, off or auto") }
        var s = current
        s.torch.mode = mode
        if let level = r.level { s.torch.level = min(max(level, 0), 1) }
        if mode != .off && s.torch.level == 0 { s.torch.level = 1 }
        return s
    }

    public static func orientation(_ r: OrientationRequest, _ current: OrientationSetting) throws(SessionError) -> OrientationSetting {
        guard [0, 90, 180, 270].contains(r.rotation) else { throw .invalidValue("rotation must be 0, 90, 180 or 270") }
        var o = current
        o.rotation = r.rotation
        if let m = r.mirrored { o.mirrored = m }
        return o
    }

    // MARK: - Helpers

    /// A value for a continuous setting: 422 when the camera has no such control, else
    /// clamped into its range.
    static func clamp(_ v: Double?, to range: CameraCore.Range?, _ what: String) throws(SessionError) -> Double? {
        guard let v else { return nil }
        guard let range else { throw .unsupported(what, supported: []) }
        return range.clamp(v)
    }

    static func clamp(_ p: Point) -> Point { Point(x: min(max(p.x, 0), 1), y: min(max(p.y, 0), 1)) }

    static func names<M: RawRepresentable<String>>(_ modes: [M]) -> String { modes.map(\.rawValue).joined(separator: ", ") }
}

extension ZoomCapability {
    func clamp(_ f: Double) -> Double { Swift.min(Swift.max(f, min), max) }
}
