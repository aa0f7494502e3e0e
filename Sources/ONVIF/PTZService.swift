// The PTZ service (ONVIF PTZ, ver20, /onvif/ptz_service): each camera is a PTZ node whose
// zoom is the session's (the lens, then the crop) and whose pan and tilt move the crop's
// centre — digital pan and tilt, so they reach only as far as the zoom leaves room. Absolute,
// relative (generic and field-of-view translation: what Frigate's autotracking sends) and
// continuous moves (run by the device: the session's per-frame ramps and its clock), Stop,
// GetStatus, and presets (the application's PTZPresets, saved with its state).

import SOAP
import SystemSupport

enum PTZSpace {
    static let base = "http://www.onvif.org/ver10/tptz/"
    static let panTiltPosition = base + "PanTiltSpaces/PositionGenericSpace"
    static let zoomPosition = base + "ZoomSpaces/PositionGenericSpace"
    static let panTiltTranslation = base + "PanTiltSpaces/TranslationGenericSpace"
    static let panTiltTranslationFov = base + "PanTiltSpaces/TranslationSpaceFov"
    static let zoomTranslation = base + "ZoomSpaces/TranslationGenericSpace"
    static let panTiltVelocity = base + "PanTiltSpaces/VelocityGenericSpace"
    static let zoomVelocity = base + "ZoomSpaces/VelocityGenericSpace"
    static let panTiltSpeed = base + "PanTiltSpaces/GenericSpeedSpace"
    static let zoomSpeed = base + "ZoomSpaces/ZoomGenericSpeedSpace"
}

enum PTZService {
    /// A ContinuousMove without Timeout ends after this (Home Assistant sends none, and its
    /// Stop leaves the zoom running: `Zoom=false`).
    static let defaultTimeout = 1.0
    static let maxTimeout = 60.0

    static func operations(_ device: any ONVIFDevice, _ presets: PTZPresets) -> [String: Operation] {
        /// The source a request's ProfileToken names.
        @Sendable func source(_ r: XMLElement, _ c: ONVIFContext) async throws(SOAPFault) -> String {
            try await MediaService.profile(device, r, c).source
        }
        @Sendable func position(_ s: String) async throws(SOAPFault) -> (position: PTZPosition, moving: PTZMoving) {
            guard let p = await device.ptzPosition(s) else { throw noEntity(s) }
            return p
        }
        return [
            "GetServiceCapabilities": Operation(access: .preAuth) { _, _ in tptz("GetServiceCapabilitiesResponse", [capabilities()]) },
            "GetNodes": Operation(access: .read) { _, c in
                tptz("GetNodesResponse", await sources(device, c).map { node($0, as: QName(ONVIFNamespace.ptz, "PTZNode")) })
            },
            "GetNode": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let token = r.child("NodeToken")?.trimmedText ?? ""
                guard await sources(device, c).contains(token) else { throw noEntity(token) }
                return tptz("GetNodeResponse", [node(token, as: QName(ONVIFNamespace.ptz, "PTZNode"))])
            },
            "GetConfigurations": Operation(access: .read) { _, c in
                tptz("GetConfigurationsResponse", await sources(device, c).map { configuration($0, as: QName(ONVIFNamespace.ptz, "PTZConfiguration")) })
            },
            "GetConfiguration": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let token = r.child("PTZConfigurationToken")?.trimmedText ?? ""
                guard let s = await sources(device, c).first(where: { configurationToken($0) == token }) else { throw noEntity(token) }
                return tptz("GetConfigurationResponse", [configuration(s, as: QName(ONVIFNamespace.ptz, "PTZConfiguration"))])
            },
            "GetConfigurationOptions": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let token = r.child("ConfigurationToken")?.trimmedText ?? ""
                guard await sources(device, c).contains(where: { configurationToken($0) == token }) else { throw noEntity(token) }
                return tptz("GetConfigurationOptionsResponse", [tptz("PTZConfigurationOptions", [
                    spaces(), tt("PTZTimeout", [tt("Min", "PT0S"), tt("Max", "PT60S")]),
                ])])
            },
            "GetStatus": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let s = try await source(r, c)
                let (p, moving) = try await position(s)
                return tptz("GetStatusResponse", [tptz("PTZStatus", [
                    positionElement(p),
                    tt("MoveStatus", [tt("PanTilt", moving.panTilt ? "MOVING" : "IDLE"), tt("Zoom", moving.zoom ? "MOVING" : "IDLE")]),
                    tt("UtcTime", XSDTime.format(c.now)),
                ])])
            },
            "AbsoluteMove": Operation(access: .operate) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let s = try await source(r, c)
                let target = try vector(r.child("Position"), panTilt: [PTZSpace.panTiltPosition], zoom: [PTZSpace.zoomPosition])
                try checkRange(target, pan: -1...1, zoom: 0...1, what: "Position")
                try await device.ptzMove(s, pan: target.pan, tilt: target.tilt, zoom: target.zoom, zoomSpeed: zoomSpeed(r))
                return tptz("AbsoluteMoveResponse", [])
            },
            "RelativeMove": Operation(access: .operate) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let s = try await source(r, c)
                let step = try vector(r.child("Translation"), panTilt: [PTZSpace.panTiltTranslation, PTZSpace.panTiltTranslationFov],
                                      zoom: [PTZSpace.zoomTranslation])
                try checkRange(step, pan: -1...1, zoom: -1...1, what: "Translation")
                let (now, _) = try await position(s)
                // The field of view's space moves by fractions of what is in view: 1 is half the
                // picture's width, which is 1 / zoom of the generic space's 2 at this zoom.
                var dx = step.pan ?? 0, dy = step.tilt ?? 0
                if step.panTiltSpace == PTZSpace.panTiltTranslationFov, let fov = await device.fieldOfView(s) {
                    dx *= fov.width; dy *= fov.height
                }
                try await device.ptzMove(s, pan: step.pan == nil ? nil : clamp(now.pan + dx, -1, 1),
                                         tilt: step.tilt == nil ? nil : clamp(now.tilt + dy, -1, 1),
                                         zoom: step.zoom.map { clamp(now.zoom + $0, 0, 1) }, zoomSpeed: zoomSpeed(r))
                return tptz("RelativeMoveResponse", [])
            },
            "ContinuousMove": Operation(access: .operate) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let s = try await source(r, c)
                let v = try vector(r.child("Velocity"), panTilt: [PTZSpace.panTiltVelocity], zoom: [PTZSpace.zoomVelocity])
                try checkRange(v, pan: -1...1, zoom: -1...1, what: "Velocity")
                var timeout = defaultTimeout
                if let t = r.child("Timeout")?.trimmedText {
                    guard let d = XSDTime.duration(t) else { throw invalidArgument("InvalidTimeout", "'\(t)' is not an xs:duration (PT1S).") }
                    timeout = min(d, maxTimeout)
                }
                try await device.ptzContinuous(s, pan: v.pan ?? 0, tilt: v.tilt ?? 0, zoom: v.zoom ?? 0, timeout: timeout)
                return tptz("ContinuousMoveResponse", [])
            },
            "Stop": Operation(access: .operate) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let s = try await source(r, c)
                let panTilt = r.child("PanTilt")?.trimmedText != "false", zoom = r.child("Zoom")?.trimmedText != "false"
                try await device.ptzStop(s, panTilt: panTilt, zoom: zoom)
                return tptz("StopResponse", [])
            },
            "GetPresets": Operation(access: .read) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let s = try await source(r, c)
                return tptz("GetPresetsResponse", presets.presets(s).map { p in
                    tptz("Preset", [tt("Name", p.name), positionElement(p.position, as: "PTZPosition")]).withAttribute("token", p.token)
                })
            },
            "SetPreset": Operation(access: .operate) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let s = try await source(r, c)
                let (p, _) = try await position(s)
                let asked = r.child("PresetToken")?.trimmedText
                guard let token = presets.set(s, token: asked?.isEmpty == false ? asked : nil,
                                                    name: r.child("PresetName")?.trimmedText, position: p) else {
                    if let asked, !asked.isEmpty { throw invalidArgument("NoToken", "No preset '\(asked)' (GetPresets lists them).") }
                    throw SOAPFault(.receiver, [QName(ONVIFNamespace.error, "Action"), QName(ONVIFNamespace.error, "TooManyPresets")],
                                    "This camera keeps \(PTZPresets.maxPresets) presets; remove one first.")
                }
                return tptz("SetPresetResponse", [tptz("PresetToken", token)])
            },
            "GotoPreset": Operation(access: .operate) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let s = try await source(r, c)
                let token = r.child("PresetToken")?.trimmedText ?? ""
                guard let p = presets.presets(s).first(where: { $0.token == token }) else {
                    throw invalidArgument("NoToken", "No preset '\(token)' (GetPresets lists them).")
                }
                try await device.ptzMove(s, pan: p.position.pan, tilt: p.position.tilt, zoom: p.position.zoom, zoomSpeed: zoomSpeed(r))
                return tptz("GotoPresetResponse", [])
            },
            "RemovePreset": Operation(access: .operate) { (r: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let s = try await source(r, c)
                let token = r.child("PresetToken")?.trimmedText ?? ""
                guard presets.remove(s, token: token) else { throw invalidArgument("NoToken", "No preset '\(token)' (GetPresets lists them).") }
                return tptz("RemovePresetResponse", [])
            },
        ]
    }

    // MARK: - Reading requests

    struct Vector { var pan, tilt, zoom: Double?; var panTiltSpace: String }

    /// A PTZVector (`PanTilt x y space`, `Zoom x space`) in the spaces this node has.
    static func vector(_ e: XMLElement?, panTilt: [String], zoom: [String]) throws(SOAPFault) -> Vector {
        guard let e else { throw invalidArgument("InvalidPosition", "The move names no PanTilt and no Zoom.") }
        var v = Vector(panTiltSpace: panTilt[0])
        if let pt = e.child("PanTilt") {
            let space = pt.attribute("space") ?? panTilt[0]
            guard panTilt.contains(space) else { throw invalidArgument("SpaceNotSupported", "The pan/tilt space \(space) is not one of this node's (\(panTilt.joined(separator: ", "))).") }
            guard let x = pt.attribute("x").flatMap(Double.init), let y = pt.attribute("y").flatMap(Double.init), x.isFinite, y.isFinite else {
                throw invalidArgument("InvalidPosition", "PanTilt needs numbers x and y.")
            }
            v.pan = x; v.tilt = y; v.panTiltSpace = space
        }
        if let z = e.child("Zoom") {
            let space = z.attribute("space") ?? zoom[0]
            guard zoom.contains(space) else { throw invalidArgument("SpaceNotSupported", "The zoom space \(space) is not this node's (\(zoom[0])).") }
            guard let x = z.attribute("x").flatMap(Double.init), x.isFinite else { throw invalidArgument("InvalidPosition", "Zoom needs a number x.") }
            v.zoom = x
        }
        if v.pan == nil && v.zoom == nil { throw invalidArgument("InvalidPosition", "The move names no PanTilt and no Zoom.") }
        return v
    }

    static func checkRange(_ v: Vector, pan: ClosedRange<Double>, zoom: ClosedRange<Double>, what: String) throws(SOAPFault) {
        for (name, value, range) in [("PanTilt x", v.pan, pan), ("PanTilt y", v.tilt, pan), ("Zoom x", v.zoom, zoom)] {
            if let value, !range.contains(value) {
                throw invalidArgument("InvalidPosition", "\(what) \(name) \(value) is outside \(range.lowerBound)…\(range.upperBound).")
            }
        }
    }

    /// A move's zoom speed (0…1; nil: at once, as when Speed is absent).
    static func zoomSpeed(_ r: XMLElement) -> Double? {
        r["Speed", "Zoom"]?.attribute("x").flatMap(Double.init).map { clamp($0, 0, 1) }.flatMap { $0 > 0 ? $0 : nil }
    }

    static func clamp(_ v: Double, _ lo: Double, _ hi: Double) -> Double { min(max(v, lo), hi) }

    static func noEntity(_ token: String) -> SOAPFault {
        invalidArgument("NoEntity", "No PTZ node or configuration '\(token)' (GetNodes and GetConfigurations list them).")
    }

    // MARK: - Writing answers

    static func tptz(_ name: String, _ children: [XMLElement]) -> XMLElement { XMLElement(ONVIFNamespace.ptz, name, children) }
    static func tptz(_ name: String, _ text: String) -> XMLElement { XMLElement(ONVIFNamespace.ptz, name, text: text) }

    /// The video sources (cameras), in profile order.
    static func sources(_ device: any ONVIFDevice, _ c: ONVIFContext) async -> [String] {
        var seen = Set<String>()
        return await device.profiles(c).map(\.source).filter { seen.insert($0).inserted }
    }

    static func configurationToken(_ source: String) -> String { "\(source)_ptz" }

    static func capabilities() -> XMLElement {
        XMLElement(ONVIFNamespace.ptz, "Capabilities", attributes: [
            "EFlip": "false", "Reverse": "false", "GetCompatibleConfigurations": "false", "MoveStatus": "true", "StatusPosition": "true",
        ])
    }

    static func positionElement(_ p: PTZPosition, as name: String = "Position") -> XMLElement {
        tt(name, [tt("PanTilt", attributes: ["x": format(p.pan), "y": format(p.tilt), "space": PTZSpace.panTiltPosition]),
                  tt("Zoom", attributes: ["x": format(p.zoom), "space": PTZSpace.zoomPosition])])
    }

    static func format(_ v: Double) -> String { String((v * 10_000).rounded() / 10_000) }

    static func range(_ lo: Double, _ hi: Double) -> [XMLElement] { [tt("Min", format(lo)), tt("Max", format(hi))] }

    static func spaces() -> XMLElement {
        func twoD(_ name: String, _ uri: String, _ lo: Double, _ hi: Double) -> XMLElement {
            tt(name, [tt("URI", uri), tt("XRange", range(lo, hi)), tt("YRange", range(lo, hi))])
        }
        func oneD(_ name: String, _ uri: String, _ lo: Double, _ hi: Double) -> XMLElement {
            tt(name, [tt("URI", uri), tt("XRange", range(lo, hi))])
        }
        return tt("Spaces", [
            twoD("AbsolutePanTiltPositionSpace", PTZSpace.panTiltPosition, -1, 1),
            oneD("AbsoluteZoomPositionSpace", PTZSpace.zoomPosition, 0, 1),
            twoD("RelativePanTiltTranslationSpace", PTZSpace.panTiltTranslation, -1, 1),
            twoD("RelativePanTiltTranslationSpace", PTZSpace.panTiltTranslationFov, -1, 1),
            oneD("RelativeZoomTranslationSpace", PTZSpace.zoomTranslation, -1, 1),
            twoD("ContinuousPanTiltVelocitySpace", PTZSpace.panTiltVelocity, -1, 1),
            oneD("ContinuousZoomVelocitySpace", PTZSpace.zoomVelocity, -1, 1),
            oneD("PanTiltSpeedSpace", PTZSpace.panTiltSpeed, 0, 1),
            oneD("ZoomSpeedSpace", PTZSpace.zoomSpeed, 0, 1),
        ])
    }

    /// A node as GetNodes and GetNode answer it (`tptz:PTZNode`, of the schema's type).
    static func node(_ source: String, as name: QName) -> XMLElement {
        var supported = spaces()
        supported.name = QName(ONVIFNamespace.schema, "SupportedPTZSpaces")
        var e = tt("", [tt("Name", source), supported, tt("MaximumNumberOfPresets", PTZPresets.maxPresets), tt("HomeSupported", false)],
                   attributes: ["token": source, "FixedHomePosition": "false"])
        e.name = name
        return e
    }

    /// A camera's PTZ configuration, as GetConfigurations and a profile carry it. The default
    /// spaces are what Home Assistant looks for before it offers pan, tilt and zoom.
    static func configuration(_ source: String, as name: QName) -> XMLElement {
        var e = tt("", [
            tt("Name", "\(source) PTZ"), tt("UseCount", 2), tt("NodeToken", source),
            tt("DefaultAbsolutePantTiltPositionSpace", PTZSpace.panTiltPosition),
            tt("DefaultAbsoluteZoomPositionSpace", PTZSpace.zoomPosition),
            tt("DefaultRelativePanTiltTranslationSpace", PTZSpace.panTiltTranslation),
            tt("DefaultRelativeZoomTranslationSpace", PTZSpace.zoomTranslation),
            tt("DefaultContinuousPanTiltVelocitySpace", PTZSpace.panTiltVelocity),
            tt("DefaultContinuousZoomVelocitySpace", PTZSpace.zoomVelocity),
            tt("DefaultPTZSpeed", [tt("PanTilt", attributes: ["x": "1", "y": "1", "space": PTZSpace.panTiltSpeed]),
                                   tt("Zoom", attributes: ["x": "1", "space": PTZSpace.zoomSpeed])]),
            tt("DefaultPTZTimeout", "PT1S"),
            tt("PanTiltLimits", [tt("Range", [tt("URI", PTZSpace.panTiltPosition), tt("XRange", range(-1, 1)), tt("YRange", range(-1, 1))])]),
            tt("ZoomLimits", [tt("Range", [tt("URI", PTZSpace.zoomPosition), tt("XRange", range(0, 1))])]),
        ], attributes: ["token": configurationToken(source)])
        e.name = name  // tptz:PTZConfiguration in the PTZ service's answers, tt: inside a profile
        return e
    }
}
