// `viewfinder cameras`: the cameras a configuration yields, made exactly as the server makes
// them, with their formats and capabilities — as text for operators or as /api/cameras' JSON.

import CameraCore
import Foundation
import Logging

public struct CameraListing {
    let cameras: [CameraInfo]

    /// Opens nothing for streaming: V4L2 nodes are only queried (formats, controls).
    public init(_ configuration: Configuration, logger: Logger = Logger(label: "viewfinder")) {
        let devices = CameraFactory.make(configuration.cameras, logger: logger)
        // The main camera as the server would choose it: session.camera, else the rear one.
        let descriptors = devices.map(\.descriptor)
        let main = configuration.session.camera ?? CameraDescriptor.defaultIndex(in: descriptors).map { descriptors[$0].id }
        cameras = devices.map {
            CameraInfo(id: $0.descriptor.id, name: $0.descriptor.name, position: $0.descriptor.position.rawValue,
                       kind: $0.descriptor.kind.rawValue, device: $0.descriptor.device, available: true,
                       formats: $0.formats, capabilities: $0.capabilities, state: "idle", main: $0.descriptor.id == main)
        }
    }

    public var isEmpty: Bool { cameras.isEmpty }

    /// `{"cameras": [...]}`, the shape of GET /api/cameras.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(["cameras": cameras])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    public var text: String {
        cameras.map(Self.describe).joined(separator: "\n")
    }

    static func describe(_ c: CameraInfo) -> String {
        var lines = ["\(c.id): \(c.name)", "  position \(c.position), \(c.kind)" + (c.device.map { ", \($0)" } ?? "")]
        // One line per pixel format: its sizes, each with its frame rates.
        var order: [String] = []
        var sizes: [String: [String]] = [:]
        for f in c.formats {
            let key = f.pixelFormat.rawValue
            if sizes[key] == nil { order.append(key) }
            sizes[key, default: []].append("\(f.width)x\(f.height)@" + f.fps.map(String.init).joined(separator: "/"))
        }
        if order.isEmpty { lines.append("  formats: none reported") }
        for key in order { lines.append("  \(key): " + sizes[key]!.joined(separator: " ")) }

        let caps = c.capabilities
        func range(_ r: CameraCore.Range?, _ unit: String = "") -> String? {
            r.map { "\(number($0.min))–\(number($0.max))\(unit)" }
        }
        let zoom = caps.zoom
        var zoomText = "zoom \(number(zoom.min))–\(number(zoom.max))×"
        zoomText += zoom.optical ? " (optical to \(number(zoom.opticalMax))×, then digital)" : " (digital)"
        lines.append("  " + zoomText)
        var focus = "focus " + caps.focusModes.map(\.rawValue).joined(separator: ", ")
        if caps.lensPosition { focus += "; lens position" }
        if caps.focusPointOfInterest { focus += "; point of interest" }
        lines.append("  " + focus)
        var exposure = "exposure " + caps.exposureModes.map(\.rawValue).joined(separator: ", ")
        if let d = range(caps.exposureDuration, " s") { exposure += "; duration \(d)" }
        if let i = range(caps.iso) { exposure += "; ISO \(i)" }
        if let b = range(caps.exposureBias, " EV") { exposure += "; bias \(b)" }
        if caps.exposurePointOfInterest { exposure += "; point of interest" }
        lines.append("  " + exposure)
        var wb = "white balance " + caps.whiteBalanceModes.map(\.rawValue).joined(separator: ", ")
        if let t = range(caps.whiteBalanceTemperature, " K") { wb += "; temperature \(t)" }
        lines.append("  " + wb)
        lines.append("  torch " + (caps.torch ? "yes" : "no"))
        return lines.joined(separator: "\n") + "\n"
    }

    static func number(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(format: "%g", v)
    }
}
