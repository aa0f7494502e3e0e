// AVFoundation's device settings in V4L2 controls, for every shape a driver has:
// zoom → ZOOM_ABSOLUTE (the optical part); focus → FOCUS_AUTO, FOCUS_ABSOLUTE,
// AUTO_FOCUS_START; exposure → EXPOSURE_AUTO + EXPOSURE_ABSOLUTE (UVC, 100 µs units),
// EXPOSURE (sensor drivers, in lines), ISO_SENSITIVITY, else AUTOGAIN + GAIN or
// ANALOGUE_GAIN as the ISO path, AUTO_EXPOSURE_BIAS; white balance → AUTO_WHITE_BALANCE,
// WHITE_BALANCE_TEMPERATURE; torch → FLASH_LED_MODE (+ FLASH_TORCH_INTENSITY). Any other
// control set by key (brightness, power-line frequency…) is kept in `controls` and written
// with the rest.
//
// A change is planned as the writes that differ, each automatic mode switched off in a
// call of its own before its manual value (uvcvideo sends the value first when both go in
// one call, and the camera stalls it), and then read back: the device's clamping and
// stepping, and what its automatic modes chose, are what the session reports.

import CV4L2
import CameraCore

public struct V4L2ControlMapping: Sendable {
    public let byID: [UInt32: DeviceControl]
    /// Seconds per sensor line, for drivers whose exposure is in lines (set per format).
    public var lineTime: Double = 1.0 / (30 * 1000)

    /// The same controls by v4l2-ctl key, for those set by key (`DeviceSettings.controls`).
    let byKey: [String: DeviceControl]

    public init(_ controls: [DeviceControl]) {
        byID = Dictionary(controls.filter { !$0.disabled }.map { ($0.id, $0) }) { a, _ in a }
        byKey = Dictionary(byID.values.map { ($0.key, $0) }) { a, _ in a }
    }

    func has(_ id: Int32) -> DeviceControl? { byID[UInt32(bitPattern: id)] }

    /// The controls a setting stands for: set by key, they show in that setting (read back),
    /// not among the controls kept by key.
    /// As this device has them: with an ISO control, gain is no setting's; with EXPOSURE_ABSOLUTE,
    /// EXPOSURE (lines) is not.
    var owned: Set<UInt32> {
        var ids = [Self.focusAuto, Self.focusAbsolute, Self.focusStart, Self.bias, Self.autoGain, Self.awb, Self.temperature,
                   Self.flash, Self.torchIntensity].compactMap { has($0)?.id }
        if let z = has(Self.zoom), z.minimum > 0 { ids.append(z.id) }
        if let m = exposureMenu { ids.append(m.id) }
        if let d = durationControl { ids.append(d.id) }
        if let i = has(Self.iso) { ids.append(i.id) } else if let g = gainControl { ids.append(g.id) }
        return Set(ids)
    }

    /// Motions, not states: a relative step or a speed written again after a replug would move
    /// the camera again.
    static let motions: Set<UInt32> = Set([V4L2_CID_PAN_RELATIVE, V4L2_CID_TILT_RELATIVE, V4L2_CID_FOCUS_RELATIVE, V4L2_CID_IRIS_RELATIVE,
                                           V4L2_CID_ZOOM_RELATIVE, V4L2_CID_ZOOM_CONTINUOUS, V4L2_CID_PAN_SPEED, V4L2_CID_TILT_SPEED]
        .map { UInt32(bitPattern: $0) })

    /// Of `keys` just set, those kept by key (`DeviceSettings.controls`): not a setting's own
    /// control, not a button (an action), a motion or read-only. (The camera keeps only those
    /// it can read back, so a write-only control is not kept either.)
    public func keptByKey(_ keys: some Sequence<String>) -> [DeviceControl] {
        let owned = owned
        return keys.compactMap { byKey[$0] }
            .filter { !owned.contains($0.id) && !Self.motions.contains($0.id) && $0.kind != .button && !$0.readOnly }
    }

    static let zoom = V4L2_CID_ZOOM_ABSOLUTE, focusAuto = V4L2_CID_FOCUS_AUTO, focusAbsolute = V4L2_CID_FOCUS_ABSOLUTE
    static let focusStart = V4L2_CID_AUTO_FOCUS_START, exposureAuto = V4L2_CID_EXPOSURE_AUTO
    static let exposureAbsolute = V4L2_CID_EXPOSURE_ABSOLUTE, exposureLines = V4L2_CID_EXPOSURE
    static let iso = V4L2_CID_ISO_SENSITIVITY, bias = V4L2_CID_AUTO_EXPOSURE_BIAS
    static let autoGain = V4L2_CID_AUTOGAIN, gain = V4L2_CID_GAIN, analogueGain = V4L2_CID_ANALOGUE_GAIN
    static let awb = V4L2_CID_AUTO_WHITE_BALANCE, temperature = V4L2_CID_WHITE_BALANCE_TEMPERATURE
    static let flash = V4L2_CID_FLASH_LED_MODE, torchIntensity = V4L2_CID_FLASH_TORCH_INTENSITY

    /// EXPOSURE_AUTO menu values.
    static let exposureManual = Int(V4L2_EXPOSURE_MANUAL.rawValue)
    static let exposureAperturePriority = Int(V4L2_EXPOSURE_APERTURE_PRIORITY.rawValue)
    static let exposureFullAuto = Int(V4L2_EXPOSURE_AUTO.rawValue)
    static let torchOn = Int(V4L2_FLASH_LED_MODE_TORCH.rawValue), torchOff = Int(V4L2_FLASH_LED_MODE_NONE.rawValue)

    /// How far digital zoom goes beyond the lens (AVFoundation's virtual device crops on).
    public static let digitalZoomMax = 4.0
    /// The ISO range gain stands for when the device has no ISO control.
    static let gainISO = Range(min: 100, max: 3200)

    // MARK: - The device's shape

    var exposureMenu: DeviceControl? {
        guard let e = has(Self.exposureAuto), e.menu[Self.exposureManual] != nil else { return nil }
        return e
    }
    /// The gain control that stands for ISO: ISO itself, else gain, else analogue gain.
    var gainControl: DeviceControl? { has(Self.gain) ?? has(Self.analogueGain) }
    var durationControl: DeviceControl? { has(Self.exposureAbsolute) ?? has(Self.exposureLines) }

    // MARK: - Capabilities

    public var capabilities: Capabilities {
        var c = Capabilities.fixed
        if let z = has(Self.zoom), z.maximum > z.minimum, z.minimum > 0 {
            let lens = Double(z.maximum) / Double(z.minimum)
            c.zoom = ZoomCapability(min: 1, max: lens * Self.digitalZoomMax, optical: true, opticalMax: lens)
        }
        var focus: [FocusMode] = [.locked]
        if has(Self.focusStart) != nil || has(Self.focusAuto) != nil { focus.append(.auto) }
        if has(Self.focusAuto) != nil { focus.append(.continuous) }
        c.focusModes = focus
        c.lensPosition = has(Self.focusAbsolute) != nil

        let automatic = exposureMenu != nil || has(Self.autoGain) != nil
        let manualValues = durationControl != nil || has(Self.iso) != nil || gainControl != nil
        var exposure: [ExposureMode] = automatic ? [.locked, .auto, .continuous] : (manualValues ? [.locked] : [.continuous])
        if manualValues { exposure.append(.custom) }
        c.exposureModes = exposure
        if let d = durationControl { c.exposureDuration = Range(min: duration(of: max(d.minimum, 1), d), max: duration(of: d.maximum, d)) }
        if let iso = has(Self.iso) { c.iso = Range(min: Double(max(iso.minimum, 1)), max: Double(iso.maximum)) }
        else if gainControl != nil { c.iso = Self.gainISO }
        if let b = has(Self.bias) { c.exposureBias = Range(min: Double(b.minimum) / 1000, max: Double(b.maximum) / 1000) }
        if has(Self.awb) != nil { c.whiteBalanceModes = has(Self.temperature) != nil ? [.locked, .auto, .continuous] : [.locked, .continuous] }
        if let t = has(Self.temperature) { c.whiteBalanceTemperature = Range(min: Double(t.minimum), max: Double(t.maximum)) }
        if let f = has(Self.flash), f.menu[Self.torchOn] != nil { c.torch = true }
        return c
    }

    // MARK: - Units

    func duration(of value: Int, _ c: DeviceControl) -> Double {
        c.id == UInt32(bitPattern: Self.exposureAbsolute) ? Double(value) / 10_000 : Double(value) * lineTime
    }
    func durationValue(_ seconds: Double, _ c: DeviceControl) -> Int {
        Int((c.id == UInt32(bitPattern: Self.exposureAbsolute) ? seconds * 10_000 : seconds / lineTime).rounded())
    }
    /// Gain onto ISO linearly: the control's range spans `gainISO`.
    func iso(ofGain g: Int, _ c: DeviceControl) -> Double {
        let span = Double(max(c.maximum - c.minimum, 1))
        return (Self.gainISO.min + Double(g - c.minimum) / span * (Self.gainISO.max - Self.gainISO.min)).rounded()
    }
    func gainValue(_ iso: Double, _ c: DeviceControl) -> Int {
        let span = Double(max(c.maximum - c.minimum, 1))
        return c.minimum + Int(((Self.gainISO.clamp(iso) - Self.gainISO.min) / (Self.gainISO.max - Self.gainISO.min) * span).rounded())
    }
    func lensValue(_ p: Double, _ c: DeviceControl) -> Int { c.minimum + Int((p * Double(c.maximum - c.minimum)).rounded()) }
    func lensPosition(_ v: Int, _ c: DeviceControl) -> Double {
        c.maximum > c.minimum ? (Double(v - c.minimum) / Double(c.maximum - c.minimum) * 1000).rounded() / 1000 : 0
    }

    // MARK: - Planning a change

    public struct Write: Sendable, Equatable {
        public var id: UInt32
        public var value: Int
    }

    /// The writes that take the device from `change.old` to `change.new`, in order; with no
    /// `old` (after stream-on or a replug) everything the settings name is written.
    public func writes(for change: SettingsChange) -> [Write] {
        var out: [Write] = []
        func put(_ id: Int32, _ v: Int) { if let c = has(id) { out.append(Write(id: c.id, value: c.clamp(v))) } }
        let new = change.new, old = change.old

        if let z = has(Self.zoom), z.minimum > 0, old?.zoom.optical != new.zoom.optical {
            put(Self.zoom, Int((new.zoom.optical * Double(z.minimum)).rounded()))
        }

        let focusModeChanged = old?.focus.mode != new.focus.mode
        switch new.focus.mode {
        case .locked:
            if focusModeChanged { put(Self.focusAuto, 0) }
            if let f = has(Self.focusAbsolute), old?.focus.lensPosition != new.focus.lensPosition || focusModeChanged {
                put(Self.focusAbsolute, lensValue(new.focus.lensPosition, f))
            }
        case .auto:
            if has(Self.focusStart) != nil {
                if focusModeChanged { put(Self.focusAuto, 0) }
                if focusModeChanged || change.runAutoFocus { put(Self.focusStart, 1) }
            } else if focusModeChanged || change.runAutoFocus {
                put(Self.focusAuto, 1)  // no one-shot AF on this device: its autofocus runs
            }
        case .continuous:
            if focusModeChanged { put(Self.focusAuto, 1) }
        }

        let e = new.exposure, eOld = old?.exposure
        let exposureModeChanged = eOld?.mode != e.mode
        switch e.mode {
        case .custom, .locked:
            if exposureModeChanged {
                if exposureMenu != nil { put(Self.exposureAuto, Self.exposureManual) }
                put(Self.autoGain, 0)
            }
            // Custom writes its values; a lock holds what the device has, so it writes them
            // only when they are values it holds (`held`, never the placeholders of a camera
            // locked from the start) and differ from the device's: after a stream-on or a
            // replug (no `old`: the device is at its defaults, the values are put back) or asked anew.
            let custom = e.mode == .custom && exposureModeChanged
            let values = e.mode == .custom || e.held
            if let d = durationControl, values, custom || eOld?.duration != e.duration {
                out.append(Write(id: d.id, value: d.clamp(durationValue(e.duration, d))))
            }
            if values, custom || eOld?.iso != e.iso {
                if has(Self.iso) != nil { put(Self.iso, Int(e.iso.rounded())) }
                else if let g = gainControl { out.append(Write(id: g.id, value: g.clamp(gainValue(e.iso, g)))) }
            }
        case .auto, .continuous:
            if exposureModeChanged {
                if let m = exposureMenu {
                    put(Self.exposureAuto, m.menu[Self.exposureAperturePriority] != nil ? Self.exposureAperturePriority : Self.exposureFullAuto)
                }
                put(Self.autoGain, 1)
            }
        }
        if has(Self.bias) != nil, eOld?.bias != e.bias { put(Self.bias, Int((e.bias * 1000).rounded())) }

        let w = new.whiteBalance, wOld = old?.whiteBalance
        if w.mode == .locked {
            if wOld?.mode != .locked { put(Self.awb, 0) }
            if wOld?.mode != .locked || wOld?.temperature != w.temperature { put(Self.temperature, Int(w.temperature.rounded())) }
        } else if wOld?.mode != w.mode {
            put(Self.awb, 1)
        }

        let t = new.torch, tOld = old?.torch
        if has(Self.flash) != nil, tOld?.mode != t.mode || tOld?.level != t.level {
            let on = t.mode == .on && t.level > 0
            if on, let i = has(Self.torchIntensity) { put(Self.torchIntensity, i.minimum + Int((t.level * Double(i.maximum - i.minimum)).rounded())) }
            put(Self.flash, on ? Self.torchOn : Self.torchOff)
        }

        // The controls kept by key, last: after the settings' modes, and their own switches and
        // menus (hue_automatic) before the values those may lock (hue).
        let kept = new.controls.compactMap { key, v in byKey[key].map { ($0, v) } }
            .sorted { a, b in (a.0.kind == .integer ? 1 : 0, a.0.key) < (b.0.kind == .integer ? 1 : 0, b.0.key) }
        for (c, v) in kept where old?.controls[c.key] != v { out.append(Write(id: c.id, value: c.clamp(v))) }
        return out
    }

    // MARK: - Applying and reading back

    /// Writes the change one control at a time. If the device refuses one, what this
    /// change already wrote is put back (newest first) and the refusal is thrown, naming
    /// the control. Answers the settings read back from the device.
    public func apply(_ change: SettingsChange, to io: ControlIO) throws(CameraError) -> DeviceSettings {
        var undo: [Write] = []
        for w in writes(for: change) {
            let before = try? io.get(w.id)
            do throws(CameraError) {
                try io.set(w.id, w.value)
            } catch {
                for u in undo.reversed() { try? io.set(u.id, u.value) }
                let key = byID[w.id]?.key ?? String(w.id)
                if case .system(let e) = error { throw .refused(control: key, value: w.value, errno: e.errno) }
                throw error
            }
            if let before, byID[w.id]?.kind != .button { undo.append(Write(id: w.id, value: before)) }
        }
        return read(change.new, from: io)
    }

    /// Puts every setting of `settings` on the device, as after stream-on or a replug: a
    /// refused write does not stop the others (nothing is undone — there is no earlier state
    /// to go back to); answers what the device has then and each refusal.
    public func restore(_ settings: DeviceSettings, to io: ControlIO) -> (DeviceSettings, refused: [CameraError]) {
        var refused: [CameraError] = []
        for w in writes(for: SettingsChange(old: nil, new: settings)) {
            do throws(CameraError) { try io.set(w.id, w.value) } catch {
                let key = byID[w.id]?.key ?? String(w.id)
                if case .system(let e) = error { refused.append(.refused(control: key, value: w.value, errno: e.errno)) } else { refused.append(error) }
            }
        }
        return (read(settings, from: io), refused)
    }

    /// `requested` as the device has it now: values read back, modes as its controls say.
    public func read(_ requested: DeviceSettings, from io: ControlIO) -> DeviceSettings {
        func value(_ id: Int32) -> (Int, DeviceControl)? {
            guard let c = has(id), let v = try? io.get(c.id) else { return nil }
            return (v, c)
        }
        var s = requested
        if let (v, z) = value(Self.zoom), z.minimum > 0 { s.zoom.optical = (Double(v) / Double(z.minimum) * 1000).rounded() / 1000 }

        if let (on, _) = value(Self.focusAuto) {
            if on != 0 && s.focus.mode == .locked { s.focus.mode = .continuous }  // turned on from outside
            if on == 0 && s.focus.mode == .continuous { s.focus.mode = .locked }
        }
        if let (v, f) = value(Self.focusAbsolute) { s.focus.lensPosition = lensPosition(v, f) }

        var manual: Bool?
        if exposureMenu != nil, let (m, _) = value(Self.exposureAuto) { manual = m == Self.exposureManual }
        else if let (a, _) = value(Self.autoGain) { manual = a == 0 }
        if let manual {
            if manual && (s.exposure.mode == .auto || s.exposure.mode == .continuous) { s.exposure.mode = .locked }
            if !manual && (s.exposure.mode == .custom || s.exposure.mode == .locked) { s.exposure.mode = .continuous }
        }
        if let d = durationControl, let v = try? io.get(d.id) { s.exposure.duration = (duration(of: v, d) * 1e6).rounded() / 1e6 }
        if let (v, _) = value(Self.iso) { s.exposure.iso = Double(v) }
        else if let g = gainControl, let v = try? io.get(g.id) { s.exposure.iso = iso(ofGain: v, g) }
        if let (v, _) = value(Self.bias) { s.exposure.bias = Double(v) / 1000 }

        if let (on, _) = value(Self.awb) {
            if on != 0 && s.whiteBalance.mode == .locked { s.whiteBalance.mode = .continuous }
            if on == 0 && s.whiteBalance.mode != .locked { s.whiteBalance.mode = .locked }
        }
        if let (v, _) = value(Self.temperature) { s.whiteBalance.temperature = Double(v) }
        for key in s.controls.keys {
            if let c = byKey[key], let v = try? io.get(c.id) { s.controls[key] = v }
        }

        if let (m, _) = value(Self.flash) {
            if m == Self.torchOn && s.torch.mode == .off { s.torch.mode = .on }
            if m != Self.torchOn && s.torch.mode == .on { s.torch.mode = .off }
        }
        return s
    }
}
