// AVFoundation's device settings in libcamera's controls, for what a camera's ControlInfoMap
// has: focus → AfMode, AfTrigger, LensPosition (dioptres), AfMetering + AfWindows (the point
// of interest); exposure → AeEnable, ExposureTime (µs), AnalogueGain (ISO 100 = gain 1),
// ExposureValue (the bias, in EV as AVFoundation's); white balance → AwbEnable,
// ColourTemperature; the frame rate → FrameDurationLimits; zoom → ScalerCrop (per request, on
// the capture thread: ScalerCrop.swift). The picture adjustments (Brightness, Contrast, Saturation, Sharpness:
// ONVIF's imaging) are the camera's own controls, as V4L2's are, in thousandths: libcamera's
// are fractions and `/api/session/controls` takes whole numbers.
//
// A change is planned as the writes that differ, then applied and read back from the first
// completed request that carries it: what the camera's algorithms chose (the exposure time
// and gain under AE, the lens under AF, the temperature under AWB) is what the session reports.
// libcamera has no one-shot exposure or white balance: `auto` there is `continuous`, as on a
// V4L2 camera with an automatic mode and no trigger.

import CameraCore

public struct LibcameraControlMapping: Sendable {
    public let byName: [String: LibcameraControl]
    /// The coordinates AfWindows are in: ScalerCrop's largest rectangle, else the pixel array.
    let sensor: (width: Double, height: Double)?

    public init(_ controls: [LibcameraControl], pixelArray: (width: Int, height: Int)? = nil) {
        byName = Dictionary(controls.map { ($0.name, $0) }) { a, _ in a }
        if let r = controls.first(where: { $0.name == Self.scalerCrop })?.rectangleMax, r.count == 4, r[2] > 0, r[3] > 0 {
            sensor = (r[2], r[3])
        } else {
            sensor = pixelArray.map { (Double($0.width), Double($0.height)) }
        }
    }

    func has(_ name: String) -> LibcameraControl? { byName[name] }

    static let afMode = "AfMode", afTrigger = "AfTrigger", lensPosition = "LensPosition"
    static let afMetering = "AfMetering", afWindows = "AfWindows"
    static let aeEnable = "AeEnable", exposureTime = "ExposureTime", analogueGain = "AnalogueGain", exposureValue = "ExposureValue"
    static let awbEnable = "AwbEnable", colourTemperature = "ColourTemperature", scalerCrop = "ScalerCrop"
    static let frameDurationLimits = "FrameDurationLimits"
    /// libcamera's AfModeEnum, AfTriggerEnum and AfMeteringEnum.
    static let afManual = 0, afAuto = 1, afContinuous = 2, afTriggerStart = 0, afMeteringWindows = 1
    /// ISO per unit of analogue gain: ISO 100 is a gain of 1 (rpicam-apps' and AVFoundation's base).
    static let isoPerGain = 100.0
    /// The focus window's share of the frame's width and height, around the point of interest.
    static let focusWindow = 0.2
    /// The picture adjustments, offered as the camera's own controls.
    public static let adjustments = ["Brightness", "Contrast", "Saturation", "Sharpness"]

    // MARK: - Capabilities

    func afModes(_ mode: Int) -> Bool { has(Self.afMode)?.values.contains(mode) ?? false }

    public var capabilities: Capabilities {
        var c = Capabilities.fixed
        // The zoom crops the sensor where the camera has ScalerCrop (ScalerCrop.swift), the frame otherwise.
        c.zoom.sensorCrop = has(Self.scalerCrop)?.rectangleMax != nil
        var focus: [FocusMode] = [.locked]
        if afModes(Self.afAuto) && has(Self.afTrigger) != nil { focus.append(.auto) }
        if afModes(Self.afContinuous) { focus.append(.continuous) }
        c.focusModes = focus
        c.lensPosition = has(Self.lensPosition)?.range.map { $0.upperBound > $0.lowerBound } ?? false
        c.focusPointOfInterest = focus.count > 1 && has(Self.afWindows) != nil && has(Self.afMetering) != nil && sensor != nil

        let manual = has(Self.exposureTime) != nil || has(Self.analogueGain) != nil
        if has(Self.aeEnable) != nil {
            c.exposureModes = [.locked, .auto, .continuous] + (manual ? [.custom] : [])
        } else if manual {
            c.exposureModes = [.locked, .custom]
        }
        if let t = has(Self.exposureTime)?.range { c.exposureDuration = Range(min: max(t.lowerBound, 1) / 1e6, max: t.upperBound / 1e6) }
        // Whole ISO inside the gain's range (1.112 is ISO 112, not 111.2).
        if let g = has(Self.analogueGain)?.range {
            c.iso = Range(min: (g.lowerBound * Self.isoPerGain - 1e-9).rounded(.up), max: (g.upperBound * Self.isoPerGain + 1e-9).rounded(.down))
        }
        if let b = has(Self.exposureValue)?.range { c.exposureBias = Range(min: b.lowerBound, max: b.upperBound) }
        if has(Self.awbEnable) != nil {
            c.whiteBalanceModes = has(Self.colourTemperature) != nil ? [.locked, .auto, .continuous] : [.locked, .continuous]
        }
        if let t = has(Self.colourTemperature)?.range { c.whiteBalanceTemperature = Range(min: t.lowerBound, max: t.upperBound) }
        return c
    }

    // MARK: - Units

    /// AVFoundation's lens position (0 nearest … 1 farthest) in dioptres (0 is infinity, the
    /// range's top the nearest the lens reaches).
    func dioptres(_ p: Double, _ c: LibcameraControl) -> Double {
        guard let r = c.range else { return 0 }
        return r.lowerBound + (1 - min(max(p, 0), 1)) * (r.upperBound - r.lowerBound)
    }
    func lensPoint(_ d: Double, _ c: LibcameraControl) -> Double {
        guard let r = c.range, r.upperBound > r.lowerBound else { return 0 }
        return ((1 - (min(max(d, r.lowerBound), r.upperBound) - r.lowerBound) / (r.upperBound - r.lowerBound)) * 1000).rounded() / 1000
    }
    /// The window around `p` (normalized, in the sensor's coordinates), inside the sensor.
    func window(around p: Point) -> [Double]? {
        guard let s = sensor else { return nil }
        let w = (s.width * Self.focusWindow).rounded(), h = (s.height * Self.focusWindow).rounded()
        let x = min(max(p.x * s.width - w / 2, 0), s.width - w), y = min(max(p.y * s.height - h / 2, 0), s.height - h)
        return [x.rounded(), y.rounded(), w, h]
    }
    func clamped(_ v: Double, _ name: String) -> Double { has(name)?.range.map { min(max(v, $0.lowerBound), $0.upperBound) } ?? v }

    // MARK: - Planning a change

    public struct Write: Sendable, Equatable {
        public var name: String
        public var values: [Double]
        public init(_ name: String, _ values: [Double]) { self.name = name; self.values = values }
    }

    /// The writes that take the camera from `change.old` to `change.new`, in order; with no
    /// `old` (before a start, or after a replug) everything the settings name is written.
    public func writes(for change: SettingsChange) -> [Write] {
        var out: [Write] = []
        func put(_ name: String, _ v: Double) { if has(name) != nil { out.append(Write(name, [clamped(v, name)])) } }
        let new = change.new, old = change.old

        let f = new.focus, fOld = old?.focus
        let focusModeChanged = fOld?.mode != f.mode
        if f.mode != .locked, fOld?.point != f.point || focusModeChanged, capabilities.focusPointOfInterest, let w = window(around: f.point) {
            put(Self.afMetering, Double(Self.afMeteringWindows))
            out.append(Write(Self.afWindows, w))
        }
        switch f.mode {
        case .locked:
            if focusModeChanged { put(Self.afMode, Double(Self.afManual)) }
            if let l = has(Self.lensPosition), focusModeChanged || fOld?.lensPosition != f.lensPosition {
                out.append(Write(Self.lensPosition, [dioptres(f.lensPosition, l)]))
            }
        case .auto:
            if focusModeChanged { put(Self.afMode, Double(Self.afAuto)) }
            if focusModeChanged || change.runAutoFocus { put(Self.afTrigger, Double(Self.afTriggerStart)) }
        case .continuous:
            if focusModeChanged { put(Self.afMode, Double(Self.afContinuous)) }
        }

        let e = new.exposure, eOld = old?.exposure
        let exposureModeChanged = eOld?.mode != e.mode
        switch e.mode {
        case .custom, .locked:
            if exposureModeChanged { put(Self.aeEnable, 0) }
            // A lock holds what the camera has: its values (when it holds some, `held`) are
            // written only when they differ (at a start or a replug, no `old`: they are put
            // back), custom's at every switch.
            let custom = e.mode == .custom && exposureModeChanged, values = e.mode == .custom || e.held
            if values, custom || eOld?.duration != e.duration { put(Self.exposureTime, (e.duration * 1e6).rounded()) }
            if values, custom || eOld?.iso != e.iso { put(Self.analogueGain, e.iso / Self.isoPerGain) }
        case .auto, .continuous:
            if exposureModeChanged { put(Self.aeEnable, 1) }
        }
        if eOld?.bias != e.bias { put(Self.exposureValue, e.bias) }

        let w = new.whiteBalance, wOld = old?.whiteBalance
        if w.mode == .locked {
            if wOld?.mode != .locked { put(Self.awbEnable, 0) }
            if wOld?.mode != .locked || wOld?.temperature != w.temperature { put(Self.colourTemperature, w.temperature.rounded()) }
        } else if wOld?.mode != w.mode {
            put(Self.awbEnable, 1)
        }
        // The picture adjustments set by key, in thousandths.
        for (key, v) in new.controls.sorted(by: { $0.key < $1.key }) where old?.controls[key] != v {
            if let name = Self.adjustment(key) { put(name, Double(v) / 1000) }
        }
        return out
    }

    /// The adjustment a control key names ("brightness" → "Brightness").
    static func adjustment(_ key: String) -> String? { adjustments.first { DeviceControl.key(of: $0) == key } }

    /// The frame rate as `FrameDurationLimits` (µs, the shortest and longest both one frame's),
    /// within the camera's range; nil where it has no such control (its pipeline's own rate).
    public func frameDuration(fps: Int) -> Write? {
        guard has(Self.frameDurationLimits) != nil, fps > 0 else { return nil }
        let d = clamped((1e6 / Double(fps)).rounded(), Self.frameDurationLimits)
        return Write(Self.frameDurationLimits, [d, d])
    }

    // MARK: - Applying and reading back

    /// Sets the change one control at a time. If the camera refuses one, what this change
    /// already set is put back (newest first) and the refusal is thrown, naming the control.
    /// Then waits (at most `timeout` s) for a completed request carrying it and answers the
    /// settings read back from that request's metadata (what was asked, when none came in time).
    public func apply(_ change: SettingsChange, to port: any LibcameraControlPort, timeout: Double) throws(CameraError) -> DeviceSettings {
        var undo: [Write] = []
        var generation: Int64 = 0
        for w in writes(for: change) {
            let before = port.get(w.name)?.values
            do throws(CameraError) {
                generation = try port.set(w.name, w.values)
            } catch {
                for u in undo.reversed() { _ = try? port.set(u.name, u.values) }
                throw error
            }
            // A trigger is an event, not a state to put back.
            if w.name != Self.afTrigger, let before, !before.isEmpty { undo.append(Write(w.name, before)) }
        }
        // Metadata older than the change would report the settings before it as the camera's:
        // when no request has carried it in time, the state is what was asked, until a read back.
        if generation > 0, !port.waitApplied(generation, timeout: timeout) { return change.new }
        return read(change.new, from: port)
    }

    /// `settings` with what the camera reports in its metadata: the exposure time and gain,
    /// the bias, the lens position and the colour temperature (modes are what was set: the
    /// metadata of libcamera 0.0.3's pipelines does not carry them).
    public func read(_ settings: DeviceSettings, from port: any LibcameraControlPort) -> DeviceSettings {
        var s = settings
        func reported(_ name: String) -> Double? {
            guard let r = port.get(name), r.fromMetadata, r.values.count == 1 else { return nil }
            return r.values[0]
        }
        if let t = reported(Self.exposureTime) { s.exposure.duration = t / 1e6 }
        if let g = reported(Self.analogueGain) { s.exposure.iso = (g * Self.isoPerGain).rounded() }
        if let b = reported(Self.exposureValue) { s.exposure.bias = b }
        if let l = has(Self.lensPosition), let d = reported(Self.lensPosition) { s.focus.lensPosition = lensPoint(d, l) }
        if let k = reported(Self.colourTemperature) { s.whiteBalance.temperature = k.rounded() }
        for key in s.controls.keys {
            if let name = Self.adjustment(key), let v = reported(name) { s.controls[key] = Self.thousandths(v) }
        }
        return s
    }

    // MARK: - The picture adjustments

    /// The adjustments the camera has, as its own controls in thousandths; `value` reads one
    /// (nil: unknown, the default is reported).
    public func adjustmentControls(value: (LibcameraControl) -> Double?) -> [DeviceControl] {
        Self.adjustments.compactMap { name -> DeviceControl? in
            guard let c = has(name), c.type == .float, let r = c.range else { return nil }
            let v = value(c) ?? c.defaultValue
            return DeviceControl(id: c.id, name: name, kind: .integer, minimum: Self.thousandths(r.lowerBound),
                                 maximum: Self.thousandths(r.upperBound), defaultValue: Self.thousandths(c.defaultValue ?? r.lowerBound),
                                 value: v.map(Self.thousandths))
        }
    }

    static func thousandths(_ v: Double) -> Int { Int((v * 1000).rounded()) }
}
