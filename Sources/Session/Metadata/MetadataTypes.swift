// What the metadata output finds and reports: codes as objects in the picture viewers see
// (normalised corners and bounds), the event announced when the set in view changes, and the
// output's state.

import CameraCore
import Foundation

/// A normalised rectangle of the picture viewers see.
public struct NormalizedRect: Sendable, Equatable, Codable {
    public var x: Double, y: Double, width: Double, height: Double
    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x; self.y = y; self.width = width; self.height = height
    }
    func contains(_ p: NormalizedPoint) -> Bool { p.x >= x && p.x <= x + width && p.y >= y && p.y <= y + height }
}

public struct NormalizedPoint: Sendable, Equatable, Codable {
    public var x: Double, y: Double
}

/// One code in view.
public struct MetadataObject: Sendable, Equatable, Codable {
    public var type: MetadataObjectType
    /// The decoded text, or base64 when the bytes are not UTF-8 (`encoding` says so).
    public var value: String
    public var encoding: String?
    public var bounds: NormalizedRect
    public var corners: [NormalizedPoint]

    init(type: MetadataObjectType, bytes: [UInt8], corners: [NormalizedPoint]) {
        self.type = type
        if let text = String(validating: bytes, as: UTF8.self) {
            value = text
        } else {
            value = Data(bytes).base64EncodedString()
            encoding = "base64"
        }
        self.corners = corners
        let xs = corners.map(\.x), ys = corners.map(\.y)
        let (x0, y0) = (xs.min() ?? 0, ys.min() ?? 0)
        func r(_ v: Double) -> Double { (v * 10000).rounded() / 10000 }  // as the corners: 0.1 ‰ of the picture
        bounds = NormalizedRect(x: r(x0), y: r(y0), width: r((xs.max() ?? 0) - x0), height: r((ys.max() ?? 0) - y0))
    }

    var key: String { type.rawValue + "\u{0}" + value }
}

/// What `metadata` events carry.
public struct MetadataEvent: Sendable, Equatable, Codable {
    public var camera: String
    public var frameSequence: UInt64
    public var timestamp: Double
    public var objects: [MetadataObject]
}

/// The state's `metadata`.
public struct MetadataState: Sendable, Equatable, Codable {
    public var types: [MetadataObjectType]
    public var rectOfInterest: NormalizedRect?
    public var objects: [MetadataObject]

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(types, forKey: .types)
        try c.encode(rectOfInterest, forKey: .rectOfInterest)
        try c.encode(objects, forKey: .objects)
    }
}

