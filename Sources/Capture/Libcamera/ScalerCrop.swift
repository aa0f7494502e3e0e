// Zoom as libcamera's ScalerCrop: the rectangle of the sensor's pixel array the ISP scales to
// the stream's size (the Pi's handlers have it; vimc's does not). The session's transform
// says what the picture shows; the capture thread turns it into a rectangle as it queues each
// request and sets it when it moved, and reads back from each completed request the rectangle
// its frame was made with, which the pipeline takes as the frame's crop (DeviceCrop.swift).

import CameraCore
import SystemSupport

/// The whole picture at zoom 1 and the rectangles of a zoom, in the sensor's pixels.
public struct ScalerCrop: Sendable, Equatable {
    /// The largest rectangle of the stream's aspect within ScalerCrop's maximum, centred: what
    /// a pipeline crops by default (the Pi's do so), the picture at zoom 1.
    public let whole: [Double]

    /// Nil without a maximum (a camera that cannot crop) or a size.
    public init?(maximum: [Double]?, width: Int, height: Int) {
        guard let m = maximum, m.count == 4, m[2] > 0, m[3] > 0, width > 0, height > 0 else { return nil }
        func even(_ v: Double) -> Double { (v / 2).rounded(.down) * 2 }
        let w = min(m[2], even(m[3] * Double(width) / Double(height))), h = min(m[3], even(m[2] * Double(height) / Double(width)))
        let x = m[0] + even((m[2] - w) / 2), y = m[1] + even((m[3] - h) / 2)
        whole = [x, y, w, h]
    }

    /// The rectangle showing `t`'s zoom about its centre, on even pixels (the Bayer pattern's
    /// pitch) inside the whole picture.
    public func rectangle(for t: FrameTransform) -> [Double] {
        let r = t.region
        func even(_ v: Double) -> Double { (v / 2).rounded() * 2 }
        let w = max(2, min(whole[2], even(r.width * whole[2]))), h = max(2, min(whole[3], even(r.height * whole[3])))
        let x = min(max(whole[0], even(whole[0] + r.x * whole[2])), whole[0] + whole[2] - w)
        let y = min(max(whole[1], even(whole[1] + r.y * whole[3])), whole[1] + whole[3] - h)
        return [x, y, w, h]
    }

    /// What a rectangle the camera used shows of the whole picture.
    public func region(of rect: [Double]) -> CropRegion? {
        guard rect.count == 4, rect[2] > 0, rect[3] > 0 else { return nil }
        return CropRegion(x: (rect[0] - whole[0]) / whole[2], y: (rect[1] - whole[1]) / whole[3],
                          width: rect[2] / whole[2], height: rect[3] / whole[3])
    }
}

/// The crops of one run's requests, on its capture thread: what each request was queued with,
/// and the last rectangle set (a pipeline keeps a crop until it is given another).
public final class ScalerCropRequests: Sendable {
    private struct State {
        var last: [Double]?
        var queued: [Int: [Double]] = [:]
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
                    _ = try port.set(LibcameraControlMapping.scalerCrop, rect)
                    s.last = rect
                } catch { s.refused = true }
            }
            s.queued[index] = s.last
        }
    }

    /// What request `index`'s frame shows: the rectangle its metadata reports, else the one it
    /// was queued with; nil when neither is known (the pipeline's own crop: the whole picture).
    public func region(_ index: Int, reported: [Double]?) -> CropRegion? {
        if let reported, let r = geometry.region(of: reported) { return r }
        return state.withLock { $0.queued[index] }.flatMap(geometry.region(of:))
    }
}
