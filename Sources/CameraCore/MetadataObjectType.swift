// What the metadata output can find in a frame: zbar's symbologies, by the names the API
// uses (AVMetadataObject.ObjectType's part here).

public enum MetadataObjectType: String, Sendable, Codable, CaseIterable, Comparable {
    case qr, ean13, ean8, upca, upce, isbn10, isbn13, code128, code39, code93, i25, codabar, databar
    case databarExpanded = "databar-exp"

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// The metadata output's reach: every type is decoded in software, so any camera offers all.
public struct MetadataCapability: Sendable, Equatable, Codable {
    public var availableTypes: [MetadataObjectType]
    public init(availableTypes: [MetadataObjectType] = MetadataObjectType.allCases) { self.availableTypes = availableTypes }
}

extension FrameTransform {
    /// Where a point of the camera's frame (normalised, (0,0) top-left) appears in the
    /// picture viewers see: the zoom's crop about its centre (as far as the edges allow), then
    /// the clockwise rotation, then the mirror, as SampleTables and tjTransform apply them.
    /// Outside 0…1 when cropped away.
    public func viewPoint(x: Double, y: Double) -> (x: Double, y: Double) {
        let z = Swift.max(1, zoom), r = region
        let zx = (x - r.x) * z, zy = (y - r.y) * z
        let (u, v): (Double, Double) = switch rotation {
        case 90: (1 - zy, zx)
        case 180: (1 - zx, 1 - zy)
        case 270: (zy, 1 - zx)
        default: (zx, zy)
        }
        return (mirrored ? 1 - u : u, v)
    }
}
