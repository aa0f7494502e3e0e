// Digital zoom, rotation and mirroring, applied while a raw frame is de-interleaved for the
// encoder — the cheapest place on YUYV: one pass that crops, turns and flips.

public struct FrameTransform: Sendable, Equatable {
    /// Centre-crop factor, ≥ 1: the output keeps the frame's size (scaled up).
    public var zoom: Double
    /// Clockwise degrees: 0, 90, 180 or 270.
    public var rotation: Int
    public var mirrored: Bool
    /// The crop's centre in the source's coordinates (0…1), as far as the frame allows.
    public var center: Point

    public init(zoom: Double = 1, rotation: Int = 0, mirrored: Bool = false, center: Point = .center) {
        self.zoom = zoom
        self.rotation = rotation
        self.mirrored = mirrored
        self.center = center
    }

    /// Where a crop `crop` long of a side `extent` long starts when centred on `center` (0…1)
    /// as far as the side allows (a crop at an edge stops there).
    public static func cropStart(extent: Double, crop: Double, center: Double) -> Double {
        min(max(0, center * extent - crop / 2), max(0, extent - crop))
    }

    /// The centre in the output's orientation: turned clockwise by `rotation`, then mirrored.
    public var outputCenter: Point {
        let c = center
        var p: Point
        switch rotation {
        case 90: p = Point(x: 1 - c.y, y: c.x)
        case 180: p = Point(x: 1 - c.x, y: 1 - c.y)
        case 270: p = Point(x: c.y, y: 1 - c.x)
        default: p = c
        }
        if mirrored { p.x = 1 - p.x }
        return p
    }

    /// The source's point shown at `p` of the output (`outputCenter`'s inverse).
    public func sourcePoint(ofOutput p: Point) -> Point {
        let m = Point(x: mirrored ? 1 - p.x : p.x, y: p.y)
        switch rotation {
        case 90: return Point(x: m.y, y: 1 - m.x)
        case 180: return Point(x: 1 - m.x, y: 1 - m.y)
        case 270: return Point(x: 1 - m.y, y: m.x)
        default: return m
        }
    }

    /// The centre the picture really has: `center`, moved in as far as the crop needs to
    /// stay within the frame (at zoom 1, the middle).
    public var effectiveCenter: Point {
        let half = 0.5 / max(1, zoom)
        return Point(x: min(max(center.x, half), 1 - half), y: min(max(center.y, half), 1 - half))
    }

    public static let identity = FrameTransform()

    public var isIdentity: Bool { zoom <= 1.0001 && rotation == 0 && !mirrored }

    /// Output size for an input of width×height (90° and 270° swap them).
    public func outputSize(width: Int, height: Int) -> (width: Int, height: Int) {
        rotation == 90 || rotation == 270 ? (height, width) : (width, height)
    }
}

/// A zoom ramp like `rampToVideoZoomFactor(_:withRate:)`: the factor moves from `from` to
/// `to` at `rate` doublings per second, starting at `start` (monotonic seconds).
public struct ZoomRamp: Sendable, Equatable {
    public var from: Double
    public var to: Double
    public var rate: Double?
    public var start: Double

    public init(from: Double, to: Double, rate: Double?, start: Double) {
        self.from = from
        self.to = to
        self.rate = rate
        self.start = start
    }

    public static func fixed(_ f: Double) -> ZoomRamp { ZoomRamp(from: f, to: f, rate: nil, start: 0) }

    public func factor(at t: Double) -> Double {
        guard let rate, rate > 0, from != to, from > 0 else { return to }
        let doublings = rate * max(0, t - start)
        let f = to > from ? from * pow2(doublings) : from / pow2(doublings)
        return to > from ? min(f, to) : max(f, to)
    }

    public func isRamping(at t: Double) -> Bool { factor(at: t) != to }

    /// When the factor reaches `to` (`start` for a ramp that is not one).
    public var end: Double {
        guard let rate, rate > 0, from != to, from > 0 else { return start }
        return start + abs(log2(to / from)) / rate
    }

    private func pow2(_ x: Double) -> Double { exp2(x) }
}

#if canImport(Glibc)
import Glibc
#endif

/// How much colour a preview JPEG keeps: as the source has it (4:2:2 from 4:2:2 and RGB
/// sources, the default), or at most 4:2:0 (half the chroma rows: smaller frames for thin
/// links; `stream.subsampling`).
public enum ChromaSubsampling: String, Sendable, Codable, CaseIterable {
    case s422 = "422"
    case s420 = "420"
}
