// Masks: polygons in the picture viewers see (normalized 0…1, after zoom, rotation and
// mirror), where motion does not count — the road, the tree that waves in the wind. The
// detector works on the camera's own grid, so each cell's centre is carried into the picture
// viewers see and tested there; the grid is made again only when the masks or the picture's
// transform change.

import CameraCore

public struct MotionPoint: Sendable, Equatable, Codable {
    public var x: Double, y: Double
    public init(x: Double, y: Double) { self.x = x; self.y = y }
}

public typealias MotionPolygon = [MotionPoint]

public enum MotionMask {
    public static let maxPolygons = 32
    public static let maxPoints = 64

    /// Whether `p` is inside `polygon` (even-odd rule).
    public static func contains(_ polygon: MotionPolygon, _ p: MotionPoint) -> Bool {
        var inside = false
        var j = polygon.count - 1
        for i in polygon.indices {
            let a = polygon[i], b = polygon[j]
            if (a.y > p.y) != (b.y > p.y), p.x < (b.x - a.x) * (p.y - a.y) / (b.y - a.y) + a.x { inside.toggle() }
            j = i
        }
        return inside
    }

    /// One byte a cell of a `gridWidth`×`gridHeight` grid over the camera's frame: 1 where
    /// motion counts — in the picture viewers see (a zoom crops the rest away) and outside
    /// every polygon.
    public static func cells(_ polygons: [MotionPolygon], gridWidth: Int, gridHeight: Int,
                             transform: FrameTransform) -> [UInt8] {
        var out = [UInt8](repeating: 1, count: gridWidth * gridHeight)
        for gy in 0..<gridHeight {
            for gx in 0..<gridWidth {
                let v = transform.viewPoint(x: (Double(gx) + 0.5) / Double(gridWidth), y: (Double(gy) + 0.5) / Double(gridHeight))
                let p = MotionPoint(x: v.x, y: v.y)
                if !(0...1).contains(p.x) || !(0...1).contains(p.y) || polygons.contains(where: { contains($0, p) }) {
                    out[gy * gridWidth + gx] = 0
                }
            }
        }
        return out
    }
}
