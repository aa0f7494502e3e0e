// Zoom as libcamera's ScalerCrop: the rectangle of the sensor's pixel array the ISP scales to
// the stream's size (the Pi's handlers have it; vimc's does not). The session's transform
// says what the picture shows; the capture thread turns it into a rectangle as it queues each
// request and sets it when it moved, and reads back from each completed request the rectangle
// its frame was made with, which the pipeline takes as the frame's crop (DeviceCrop.swift).

import CameraCore
import SystemSupport

/// A rectangle of the sensor's pixel array, as libcamera's Rectangle has it: a value, so a
/// request's crop is compared and kept without an array's allocation.
public struct SensorRectangle: Sendable, Equatable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x; self.y = y; self.width = width; self.height = height
    }

    /// A control's four values (x, y, width, height); nil unless four with a size.
    public init?(_ values: [Double]?) {
        guard let v = values, v.count == 4, v[2] > 0, v[3] > 0 else { return nil }
        self.init(x: v[0], y: v[1], width: v[2], height: v[3])
    }

    /// As the control takes it.
    public var values: [Double] { [x, y, width, height] }
}

/// The whole picture at zoom 1 and the rectangles of a zoom, in the sensor's pixels.
public struct ScalerCrop: Sendable, Equatable {
    /// The largest rectangle of the stream's aspect within ScalerCrop's maximum, centred: what
    /// a pipeline crops by default (the Pi's do so), the picture at zoom 1.
    public let whole: SensorRectangle

    /// Nil without a maximum (a camera that cannot crop) or a size.
    public init?(maximum: [Double]?, width: Int, height: Int) {
        guard let m = SensorRectangle(maximum), width > 0, height > 0 else { return nil }
        func even(_ v: Double) -> Double { (v / 2).rounded(.down) * 2 }
        let w = min(m.width, even(m.height * Double(width) / Double(height))), h = min(m.height, even(m.width * Double(height) / Double(width)))
        whole = SensorRectangle(x: m.x + even((m.width - w) / 2), y: m.y + even((m.height - h) / 2), width: w, height: h)
    }

    /// The rectangle showing `t`'s zoom about its centre, on even pixels (the Bayer pattern's
    /// pitch) inside the whole picture.
    public func rectangle(for t: FrameTransform) -> SensorRectangle {
        let r = t.region, a = whole
        func even(_ v: Double) -> Double { (v / 2).rounded() * 2 }
        let w = max(2, min(a.width, even(r.width * a.width))), h = max(2, min(a.height, even(r.height * a.height)))
        let x = min(max(a.x, even(a.x + r.x * a.width)), a.x + a.width - w)
        let y = min(max(a.y, even(a.y + r.y * a.height)), a.y + a.height - h)
        return SensorRectangle(x: x, y: y, width: w, height: h)
    }

    /// What a rectangle the camera used shows of the whole picture.
    public func region(of rect: SensorRectangle) -> CropRegion {
        CropRegion(x: (rect.x - whole.x) / whole.width, y: (rect.y - whole.y) / whole.height,
                   width: rect.width / whole.width, height: rect.height / whole.height)
    }
}

/// The crops of one run's requests, on its capture thread: what each request was queued with,
/// and the last rectangle set (a pipeline keeps a crop until it is given another).
public final class ScalerCropRequests: Sendable {
    private struct State {
        var last: SensorRectangle?
        var queued: [Int: SensorRectangle] = [:]
        /// The camera refused a rectangle: the frames keep reporting the one it has.
        var refused = false
    }
    public let geometry: ScalerCrop
    private let source: @Sendable () -> FrameTransform
    private let state = Locked(State())

    public init(geometry: ScalerCrop, source: @escaping @Sendable () -> FrameTransform) {
        self.geometry = geometry
        self.source = source
    }

    /// Before request `index` is queued (before a start, for each request the start queues):
    /// the rectangle the session's transform asks for now, set on the camera when it moved.
    public func prepare(_ index: Int, on port: any LibcameraControlPort) {
        let rect = geometry.rectangle(for: source())
        state.withLock { s in
            if !s.refused, rect != s.last {
                do throws(CameraError) {
                    _ = try port.set(LibcameraControlMapping.scalerCrop, rect.values)
                    s.last = rect
                } catch { s.refused = true }
            }
            s.queued[index] = s.last
        }
    }

    /// What request `index`'s frame shows: the rectangle its metadata reports, else the one it
    /// was queued with; nil when neither is known (the pipeline's own crop: the whole picture).
    public func region(_ index: Int, reported: SensorRectangle?) -> CropRegion? {
        if let r = reported { return geometry.region(of: r) }
        return state.withLock { $0.queued[index] }.map(geometry.region(of:))
    }
}
