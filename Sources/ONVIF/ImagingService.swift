// The imaging service (ONVIF Imaging, ver20, /onvif/imaging_service): a video source's
// focus, exposure and white balance, each AUTO or MANUAL, mapped by the application onto the
// session's own calls (the same validation and read-back as HTTP's). What the camera lacks is
// left out of the settings and options, as the standard allows. Brightness, colour saturation,
// contrast, sharpness and backlight compensation are the camera's own controls where it has
// them (V4L2's), in the control's own range, which the options give.

import SOAP

enum ImagingService {
    static func operations(_ device: any ONVIFDevice) -> [String: Operation] {
        @Sendable func source(_ r: XMLElement, _ c: ONVIFContext) async throws(SOAPFault) -> (String, ImagingState) {
            let token = r.child("VideoSourceToken")?.trimmedText ?? ""
            guard let state = await device.imaging(token) else {
                throw invalidArgument("NoSource", "No video source '\(token)' (GetVideoSources lists them).")
            }
            return (token, state)
        }
        return [
            "GetServiceCapabilities": Operation(access: .preAuth) { _, _ in timg("GetServiceCapabilitiesResponse", [capabilities()]) },
            "GetImagingSettings": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let (_, state) = try await source(r, c)
                return timg("GetImagingSettingsResponse", [settings(state)])
            },
            "GetOptions": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let (_, state) = try await source(r, c)
                return timg("GetOptionsResponse", [options(state)])
            },
            "SetImagingSettings": Operation(access: .operate) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let (token, state) = try await source(r, c)
                guard let s = r.child("ImagingSettings") else { throw invalidArgument("SettingsInvalid", "ImagingSettings is required.") }
                let known = ["Focus", "Exposure", "WhiteBalance", "Extension"] + ImagingAdjustment.allCases.map(\.rawValue)
                let unsupported = s.children.map(\.name.local).filter { !known.contains($0) }
                guard unsupported.isEmpty else {
                    throw invalidArgument("SettingsInvalid", "This device sets focus, exposure, white balance and its camera's own adjustments, not \(unsupported.joined(separator: ", ")).")
                }
                try await device.setImaging(token, try change(s, state))
                return timg("SetImagingSettingsResponse", [])
            },
            "GetMoveOptions": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let (_, state) = try await source(r, c)
                var options: [XMLElement] = []
                if state.focus?.position != nil { options.append(tt("Absolute", [tt("Position", [tt("Min", "0"), tt("Max", "1")])])) }
                return timg("GetMoveOptionsResponse", [timg("MoveOptions", options)])
            },
            "Move": Operation(access: .operate) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let (token, state) = try await source(r, c)
                guard state.focus?.position != nil else { throw noFocusLens() }
                guard let text = r["Focus", "Absolute", "Position"]?.trimmedText else {
                    throw invalidArgument("SettingsInvalid", "Only an Absolute focus move (a Position, 0…1) is offered.")
                }
                guard let position = Double(text), (0...1).contains(position) else {
                    throw invalidArgument("SettingsInvalid", "Focus position '\(text)' is outside 0…1.")
                }
                try await device.setImaging(token, ImagingChange(focusAuto: false, focusPosition: position))
                return timg("MoveResponse", [])
            },
            "Stop": Operation(access: .operate) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                _ = try await source(r, c)
                return timg("StopResponse", [])  // a focus move is done when Move answers
            },
            "GetStatus": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let (_, state) = try await source(r, c)
                guard let position = state.focus?.position else { throw noFocusLens() }
                return timg("GetStatusResponse", [timg("Status", [tt("FocusStatus20", [
                    tt("Position", PTZService.format(position)), tt("MoveStatus", "IDLE"),
                ])])])
            },
        ]
    }

    static func timg(_ name: String, _ children: [XMLElement]) -> XMLElement { XMLElement(ONVIFNamespace.imaging, name, children) }

    static func capabilities() -> XMLElement {
        XMLElement(ONVIFNamespace.imaging, "Capabilities", attributes: ["ImageStabilization": "false", "Presets": "false", "AdaptablePreset": "false"])
    }

    static func noFocusLens() -> SOAPFault {
        SOAPFault(.receiver, [QName(ONVIFNamespace.error, "ActionNotSupported"), QName(ONVIFNamespace.error, "NoImagingForSource")],
                  "This camera's focus cannot be moved (it has no lens position control).")
    }

    static func mode(_ auto: Bool) -> String { auto ? "AUTO" : "MANUAL" }

    static func settings(_ s: ImagingState) -> XMLElement {
        // ImagingSettings20's order: the adjustments before Exposure are BacklightCompensation,
        // Brightness, ColorSaturation and Contrast; Sharpness comes after Focus.
        var children = adjustmentSettings(s, .backlightCompensation, .brightness, .colorSaturation, .contrast)
        if let e = s.exposure {
            children.append(tt("Exposure", [tt("Mode", mode(e.auto))]
                + (e.timeRange.map { [tt("MinExposureTime", PTZService.format($0.lowerBound)), tt("MaxExposureTime", PTZService.format($0.upperBound))] } ?? [])
                + (e.gainRange.map { [tt("MinGain", PTZService.format($0.lowerBound)), tt("MaxGain", PTZService.format($0.upperBound))] } ?? [])
                + [tt("ExposureTime", PTZService.format(e.time)), tt("Gain", PTZService.format(e.gain))]))
        }
        if let f = s.focus {
            children.append(tt("Focus", [tt("AutoFocusMode", mode(f.auto))]))
        }
        children += adjustmentSettings(s, .sharpness)
        if let w = s.whiteBalance {
            children.append(tt("WhiteBalance", [tt("Mode", mode(w.auto))]))
        }
        return timg("ImagingSettings", children)
    }

    static func adjustmentSettings(_ s: ImagingState, _ names: ImagingAdjustment...) -> [XMLElement] {
        names.compactMap { name in
            s.adjustments[name].map { a in
                name == .backlightCompensation
                    ? tt(name.rawValue, [tt("Mode", a.value > 0 ? "ON" : "OFF"), tt("Level", PTZService.format(a.value))])
                    : tt(name.rawValue, PTZService.format(a.value))
            }
        }
    }

    static func options(_ s: ImagingState) -> XMLElement {
        func range(_ name: String, _ r: ClosedRange<Double>) -> XMLElement {
            tt(name, [tt("Min", PTZService.format(r.lowerBound)), tt("Max", PTZService.format(r.upperBound))])
        }
        func adjustments(_ names: ImagingAdjustment...) -> [XMLElement] {
            names.compactMap { name in
                s.adjustments[name].map { a in
                    name == .backlightCompensation
                        ? tt(name.rawValue, (a.range.lowerBound <= 0 ? [tt("Mode", "OFF")] : []) + [tt("Mode", "ON"), range("Level", a.range)])
                        : range(name.rawValue, a.range)
                }
            }
        }
        var children = adjustments(.backlightCompensation, .brightness, .colorSaturation, .contrast)
        if let e = s.exposure {
            children.append(tt("Exposure", e.modes.map { tt("Mode", mode($0)) }
                + (e.timeRange.map { [range("ExposureTime", $0)] } ?? []) + (e.gainRange.map { [range("Gain", $0)] } ?? [])))
        }
        if let f = s.focus { children.append(tt("Focus", f.modes.map { tt("AutoFocusModes", mode($0)) })) }
        children += adjustments(.sharpness)
        if let w = s.whiteBalance { children.append(tt("WhiteBalance", w.modes.map { tt("Mode", mode($0)) })) }
        return timg("ImagingOptions", children)
    }

    /// The change an ImagingSettings asks for, checked against what the source can do.
    static func change(_ s: XMLElement, _ state: ImagingState) throws(SOAPFault) -> ImagingChange {
        func auto(_ e: XMLElement?, _ what: String) throws(SOAPFault) -> Bool? {
            guard let text = e?.trimmedText else { return nil }
            switch text {
            case "AUTO": return true
            case "MANUAL": return false
            default: throw invalidArgument("SettingsInvalid", "\(what) '\(text)' is neither AUTO nor MANUAL.")
            }
        }
        func number(_ e: XMLElement?, _ what: String) throws(SOAPFault) -> Double? {
            guard let text = e?.trimmedText else { return nil }
            guard let v = Double(text), v.isFinite else { throw invalidArgument("SettingsInvalid", "\(what) '\(text)' is not a number.") }
            return v
        }
        func offered(_ value: Bool?, _ modes: [Bool]?, _ what: String) throws(SOAPFault) {
            guard let value else { return }
            guard let modes, modes.contains(value) else {
                throw invalidArgument("SettingsInvalid", "\(what) \(mode(value)) is not offered by this camera (GetOptions lists what is).")
            }
        }
        var c = ImagingChange()
        for name in ImagingAdjustment.allCases {
            guard let e = s.child(name.rawValue) else { continue }
            guard let a = state.adjustments[name] else {
                throw invalidArgument("SettingsInvalid", "\(name.rawValue) is not a control of this camera (GetOptions lists what is).")
            }
            var value: Double
            if name == .backlightCompensation {
                switch e.child("Mode")?.trimmedText {
                case "OFF"?: value = 0
                case "ON"?: value = try number(e.child("Level"), "BacklightCompensation Level") ?? max(a.value, min(1, a.range.upperBound))
                case let other?: throw invalidArgument("SettingsInvalid", "BacklightCompensation Mode '\(other)' is neither ON nor OFF.")
                case nil: throw invalidArgument("SettingsInvalid", "BacklightCompensation needs a Mode (ON or OFF).")
                }
            } else {
                guard let v = try number(e, name.rawValue) else { throw invalidArgument("SettingsInvalid", "\(name.rawValue) is empty.") }
                value = v
            }
            guard a.range.contains(value) else {
                throw invalidArgument("SettingsInvalid", "\(name.rawValue) \(PTZService.format(value)) is outside \(PTZService.format(a.range.lowerBound))…\(PTZService.format(a.range.upperBound)).")
            }
            c.adjustments[name] = value
        }
        if let f = s.child("Focus") {
            c.focusAuto = try auto(f.child("AutoFocusMode"), "AutoFocusMode")
            try offered(c.focusAuto, state.focus?.modes, "Focus")
        }
        if let e = s.child("Exposure") {
            c.exposureAuto = try auto(e.child("Mode"), "Exposure Mode")
            try offered(c.exposureAuto, state.exposure?.modes, "Exposure")
            c.exposureTime = try number(e.child("ExposureTime"), "ExposureTime")
            c.gain = try number(e.child("Gain"), "Gain")
            if let t = c.exposureTime, let r = state.exposure?.timeRange, !r.contains(t) {
                throw invalidArgument("SettingsInvalid", "ExposureTime \(t) µs is outside \(r.lowerBound)…\(r.upperBound).")
            }
            if let g = c.gain, let r = state.exposure?.gainRange, !r.contains(g) {
                throw invalidArgument("SettingsInvalid", "Gain \(g) is outside \(r.lowerBound)…\(r.upperBound).")
            }
            if (c.exposureTime != nil || c.gain != nil) && c.exposureAuto == true {
                throw invalidArgument("SettingsInvalid", "ExposureTime and Gain are for MANUAL exposure.")
            }
        }
        if let w = s.child("WhiteBalance") {
            c.whiteBalanceAuto = try auto(w.child("Mode"), "WhiteBalance Mode")
            try offered(c.whiteBalanceAuto, state.whiteBalance?.modes, "WhiteBalance")
            if w.child("CrGain") != nil || w.child("CbGain") != nil {
                throw invalidArgument("SettingsInvalid", "White balance gains are not offered: this camera sets a colour temperature (POST /api/session/white-balance).")
            }
        }
        return c
    }
}
