// Zoom done by the camera itself: a libcamera pipeline crops the sensor's pixel array
// (ScalerCrop) before its ISP scales to the stream's size, so a zoomed frame keeps the sensor's
// detail where a crop of the delivered frame only scales pixels up. The session's transform
// stays the one truth of what the picture shows; the camera asks it for the crop as it queues
// each request, and every frame says which crop it was made with (`Sample.crop`, read from
// the completed request). The pipeline then does only what remains — nothing while the camera
// keeps up, the difference for the few frames already in flight when the zoom moves.

/// A part of the camera's whole picture (its coordinates at zoom 1, 0…1, before rotation and
/// mirroring), as a frame cropped by the camera shows it.
public struct CropRegion: Sendable, Equatable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x; self.y = y; self.width = width; self.height = height
    }

    public static let whole = CropRegion(x: 0, y: 0, width: 1, height: 1)
}

extension FrameTransform {
    /// The part of the whole picture this transform shows: 1/zoom of each side about the
    /// centre, moved in as far as the picture's edges need.
    public var region: CropRegion {
        let side = 1 / max(1, zoom), c = effectiveCenter
        return CropRegion(x: c.x - side / 2, y: c.y - side / 2, width: side, height: side)
    }

    /// What is left to do on a frame that shows only `shown` of the whole picture: the crop
    /// of this transform's region within it (in the frame's coordinates), and all of the
    /// rotation and mirror. A frame that shows less than the region (the zoom went out while
    /// it was in flight) is shown whole: it cannot give back what the camera cropped away.
    public func remaining(after shown: CropRegion) -> FrameTransform {
        guard shown.width > 0, shown.height > 0 else { return self }
        let wanted = region
        let z = max(1, min(shown.width / wanted.width, shown.height / wanted.height))
        func inside(_ v: Double) -> Double { min(max(v, 0), 1) }
        let center = Point(x: inside((wanted.x + wanted.width / 2 - shown.x) / shown.width),
                           y: inside((wanted.y + wanted.height / 2 - shown.y) / shown.height))
        // What is within a hundredth of the frame is the camera's rounding to its crop's pitch
        // (4 of 576 pixels at 8× on a Camera Module 3), not a zoom: nothing is left to crop, and
        // the encoders keep their fast path for an identity transform.
        let negligible = z < 1 + Self.cropTolerance
        return FrameTransform(zoom: negligible ? 1 : z, rotation: rotation, mirrored: mirrored, center: negligible ? .center : center)
    }

    /// How much larger than asked a camera's crop may be and be taken as it (a share of each side).
    public static let cropTolerance = 0.01
}
