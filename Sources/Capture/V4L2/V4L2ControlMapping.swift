// AVFoundation's device settings in V4L2 controls: zoom → ZOOM_ABSOLUTE (else digital);
// focus → FOCUS_AUTO, FOCUS_ABSOLUTE, AUTO_FOCUS_START; exposure → EXPOSURE_AUTO,
// EXPOSURE_ABSOLUTE (100 µs units), ISO_SENSITIVITY, AUTO_EXPOSURE_BIAS, gain as the ISO
// fallback; white balance → AUTO_WHITE_BALANCE, WHITE_BALANCE_TEMPERATURE; torch →
// FLASH_LED_MODE. Capabilities report only what the device has; values are clamped to
// its ranges; an automatic mode is switched off before a manual value is written.

import CV4L2
import CameraCore

public struct V4L2ControlMapping {
    public let byID: [UInt32: DeviceControl]

    public init(_ controls: [DeviceControl]) {
        byID = Dictionary(controls.filter { !$0.disabled }.map { ($0.id, $0) }) { a, _ in a }
    }

    func has(_ id: Int32) -> DeviceControl? { byID[UInt32(bitPattern: id)] }

    static let zoom = V4L2_CID_ZOOM_ABSOLUTE, focusAuto = V4L2_CID_FOCUS_AUTO, focusAbsolute = V4L2_CID_FOCUS_ABSOLUTE
    static let focusStart = V4L2_CID_AUTO_FOCUS_START, exposureAuto = V4L2_CID_EXPOSURE_AUTO
    static let exposureAbsolute = V4L2_CID_EXPOSURE_ABSOLUTE, iso = V4L2_CID_ISO_SENSITIVITY
    static let bias = V4L2_CID_AUTO_EXPOSURE_BIAS, gain = V4L2_CID_GAIN
    static let awb = V4L2_CID_AUTO_WHITE_BALANCE, temperature = V4L2_CID_WHITE_BALANCE_TEMPERATURE
    static let flash = V4L2_CID_FLASH_LED_MODE

    /// EXPOSURE_AUTO menu values.
    static let exposureManual = Int(V4L2_EXPOSURE_MANUAL.rawValue)
    static let exposureAperturePriority = Int(V4L2_EXPOSURE_APERTURE_PRIORITY.rawValue)
    static let exposureFullAuto = Int(V4L2_EXPOSURE_AUTO.rawValue)

    // MARK: - Capabilities

    public var capabilities: Capabilities {
        var c = Capabilities.fixed
        if let z = has(Self.zoom), z.maximum > z.minimum, z.minimum > 0 {
            c.zoom = ZoomCapability(min: 1, max: Double(z.maximum) / Double(z.minimum), optical: true)
        }
        var focus = ["locked"]
        if has(Self.focusAuto) != nil { focus += ["continuous"] }
        if has(Self.focusStart) != nil || has(Self.focusAuto) != nil { focus.insert("auto", at: 1) }
        c.focusModes = focus
        c.lensPosition = has(Self.focusAbsolute) != nil
        var exposure = ["continuous"]
        if let e = has(Self.exposureAuto), e.menu[Self.exposureManual] != nil {
            exposure = ["locked", "auto", "continuous"]
            if let ea = has(Self.exposureAbsolute) {
                exposure.append("custom")
                c.exposureDuration = Range(min: Double(max(ea.minimum, 1)) / 10_000, max: Double(ea.maximum) / 10_000)
            }
        }
        c.exposureModes = exposure
        if let iso = has(Self.iso) { c.iso = Range(min: Double(iso.minimum), max: Double(iso.maximum)) }
        else if let g = has(Self.gain), exposure.contains("custom") {
            c.iso = Range(min: 100, max: 100 * Double(g.maximum) / Double(max(g.defaultValue, 1)))  // gain as ISO
        }
        if let b = has(Self.bias) { c.exposureBias = Range(min: Double(b.minimum) / 1000, max: Double(b.maximum) / 1000) }
        if has(Self.awb) != nil {
            c.whiteBalanceModes = has(Self.temperature) != nil ? ["locked", "auto", "continuous"] : ["continuous", "locked"]
        }
        if let t = has(Self.temperature) { c.whiteBalanceTemperature = Range(min: Double(t.minimum), max: Double(t.maximum)) }
        if let f = has(Self.flash), f.menu[Int(V4L2_FLASH_LED_MODE_TORCH.rawValue)] != nil { c.torch = true }
        return c
    }

    // MARK: - Applying settings

    /// The control writes that put the device in `s`, in order: each automatic mode is
    /// switched off before its manual value is written (the C920 ignores a manual focus
    /// while autofocus is on), and values are clamped to the control's range.
    public func writes(for s: DeviceSettings) -> [(id: UInt32, value: Int)] {
        var out: [(UInt32, Int)] = []
        func put(_ id: Int32, _ v: Int) { if let c = has(id) { out.append((c.id, c.clamp(v))) } }

        if let z = has(Self.zoom), z.minimum > 0 { put(Self.zoom, Int((s.zoom.factor * Double(z.minimum)).rounded())) }

        switch s.focus.mode {
        case "locked":
            put(Self.focusAuto, 0)
            if let f = has(Self.focusAbsolute) {
                put(Self.focusAbsolute, f.minimum + Int((s.focus.lensPosition * Double(f.maximum - f.minimum)).rounded()))
            }
        case "auto":
            put(Self.focusAuto, 0)
            if has(Self.focusStart) != nil { put(Self.focusStart, 1) } else { put(Self.focusAuto, 1) }
        default:
            put(Self.focusAuto, 1)
        }

        switch s.exposure.mode {
        case "custom", "locked":
            put(Self.exposureAuto, Self.exposureManual)
            put(Self.exposureAbsolute, Int((s.exposure.duration * 10_000).rounded()))
            if has(Self.iso) != nil { put(Self.iso, Int(s.exposure.iso.rounded())) }
            else if let g = has(Self.gain) { put(Self.gain, Int((s.exposure.iso / 100 * Double(g.defaultValue)).rounded())) }
        default:
            if let e = has(Self.exposureAuto) {
                put(Self.exposureAuto, e.menu[Self.exposureAperturePriority] != nil ? Self.exposureAperturePriority : Self.exposureFullAuto)
            }
        }
        if has(Self.bias) != nil { put(Self.bias, Int((s.exposure.bias * 1000).rounded())) }

        if s.whiteBalance.mode == "locked" {
            put(Self.awb, 0)
            put(Self.temperature, Int(s.whiteBalance.temperature.rounded()))
        } else {
            put(Self.awb, 1)
        }

        if has(Self.flash) != nil {
            let mode = s.torch.mode == "on" && s.torch.level > 0 ? V4L2_FLASH_LED_MODE_TORCH : V4L2_FLASH_LED_MODE_NONE
            put(Self.flash, Int(mode.rawValue))
        }
        return out
    }

    /// Writes `s` through `io`; a control the driver refuses is skipped, the rest go on.
    public func apply(_ s: DeviceSettings, to io: ControlIO) -> [CameraError] {
        var errors: [CameraError] = []
        for w in writes(for: s) {
            do throws(CameraError) { try io.set(w.id, w.value) } catch { errors.append(error) }
        }
        return errors
    }
}
