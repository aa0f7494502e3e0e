// What the capture thread reads per frame while the session may change it: the preview's
// quality and chroma, the zoom ramp and the lens's reach, the orientation, the crop's centre
// (still or panning).

import CameraCore
import SystemSupport

/// What the capture thread reads per frame while the session may change it.
public final class PipelineSettings: Sendable {
    private struct Values {
        var quality: Int
        /// The preview's chroma (photos keep the source's).
        var subsampling: ChromaSubsampling
        var ramp = ZoomRamp.fixed(1)
        /// The lens's reach: the crop is the part of the zoom beyond it.
        var opticalMax = 1.0
        var rotation = 0
        var mirrored = false
        /// The crop's centre (the sensor's coordinates), still or panning.
        var pan = PanRamp.fixed(.center)
    }
    private let values: Locked<Values>

    public init(quality: Int, subsampling: ChromaSubsampling = .s422) {
        values = Locked(Values(quality: quality, subsampling: subsampling))
    }

    public var subsampling: ChromaSubsampling { values.withLock { $0.subsampling } }

    public var quality: Int {
        get { values.withLock { $0.quality } }
        set { values.withLock { $0.quality = newValue } }
    }

    public var ramp: ZoomRamp {
        get { values.withLock { $0.ramp } }
        set { values.withLock { $0.ramp = newValue } }
    }

    public var opticalMax: Double {
        get { values.withLock { $0.opticalMax } }
        set { values.withLock { $0.opticalMax = newValue } }
    }

    public var pan: PanRamp {
        get { values.withLock { $0.pan } }
        set { values.withLock { $0.pan = newValue } }
    }

    public func setOrientation(rotation: Int, mirrored: Bool) {
        values.withLock { $0.rotation = rotation; $0.mirrored = mirrored }
    }

    /// The crop at time `t`: only the part of the zoom the lens cannot do.
    public func digitalZoom(at t: Double) -> Double {
        values.withLock { max(1, $0.ramp.factor(at: t) / $0.opticalMax) }
    }

    public func transform(at t: Double) -> FrameTransform { values.withLock { Self.transform($0, at: t) } }

    private static func transform(_ v: Values, at t: Double) -> FrameTransform {
        FrameTransform(zoom: max(1, v.ramp.factor(at: t) / v.opticalMax), rotation: v.rotation, mirrored: v.mirrored,
                       center: v.pan.center(at: t))
    }

    /// Where the crop's centre is at `t`, as far as the frame allows at that moment's zoom.
    public func shownCenter(at t: Double) -> Point { transform(at: t).effectiveCenter }

    /// Pans from where the centre is shown at `t`, at `velocity` (the source's coordinates a
    /// second) for `duration` seconds.
    func startPan(velocity: Point, at t: Double, for duration: Double) {
        values.withLock { v in
            v.pan = PanRamp(from: Self.transform(v, at: t).effectiveCenter, velocity: velocity, start: t, end: t + duration)
        }
    }

    /// Ends a pan where it has got to at `t`: the centre it holds, nil when none had been set going.
    func holdPan(at t: Double) -> Point? {
        values.withLock { v in
            guard !v.pan.isFixed else { return nil }
            let c = Self.transform(v, at: t).effectiveCenter
            v.pan = .fixed(c)
            return c
        }
    }
}
