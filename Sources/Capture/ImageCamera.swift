// A still JPEG served as a camera: decoded once, scaled to the requested size, converted to
// YUYV and delivered at the frame rate like any other camera's frames.

import CameraCore
import Foundation
import SystemSupport
import JPEG

public final class ImageCamera: CaptureDevice, Sendable {
    public let descriptor: CameraDescriptor
    public let path: String
    private let thread = Locked<PacedCaptureThread?>(nil)

    public init(id: String, path: String, position: CameraDescriptor.Position) {
        self.path = path
        descriptor = CameraDescriptor(id: id, name: "Image \((path as NSString).lastPathComponent)",
                                      position: position, kind: .image)
    }

    /// A still image: digital zoom only, fixed focus, no torch.
    public var capabilities: Capabilities { .fixed }

    /// The image's own size plus the common smaller sizes.
    public var formats: [FormatOption] {
        var sizes = [(640, 480), (1280, 720)]
        if let data = try? Sys.readFile(path), let size = try? JPEGDecoder.size(of: data) {
            sizes = sizes.filter { $0.0 <= size.width && $0.1 <= size.height }
            sizes.append((size.width & ~1, size.height))
        }
        return sizes.map { FormatOption(pixelFormat: .yuyv, width: $0.0, height: $0.1, fps: [30, 15, 5]) }
    }

    public func start(format: VideoFormat, handler: @escaping FrameHandler) throws(CameraError) {
        guard format.pixelFormat == .yuyv, format.width % 2 == 0, format.width > 0, format.height > 0 else {
            throw .unsupportedFormat("\(format.width)x\(format.height) \(format.pixelFormat.rawValue)")
        }
        let data: [UInt8]
        do { data = try Sys.readFile(path) } catch { throw .unavailable("cannot read image \(path): \(error)") }
        let image: RGBImage
        do { image = try JPEGDecoder.decodeRGB(data) } catch {
            throw .invalidImage("\(path): \(error)")
        }
        stop()
        let frame = Self.yuyv(from: image, width: format.width, height: format.height)
        let t = PacedCaptureThread(name: "image-\(descriptor.id)", fps: format.fps) { seq, ts in
            frame.withUnsafeBytes { bytes in
                handler(RawFrame(format: format, bytes: bytes, stride: format.width * 2,
                                 sequence: seq, timestamp: ts))
            }
        }
        thread.withLock { $0 = t }
    }

    public func stop() {
        let t = thread.withLock { t -> PacedCaptureThread? in defer { t = nil }; return t }
        t?.stop()
    }

    /// Nearest-neighbour scale to width×height, then RGB → YUYV (chroma averaged per pair).
    static func yuyv(from image: RGBImage, width: Int, height: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: width * height * 2)
        for y in 0..<height {
            let sy = y * image.height / height
            for x in stride(from: 0, to: width, by: 2) {
                let a = image.pixel(x: x * image.width / width, y: sy)
                let b = image.pixel(x: (x + 1) * image.width / width, y: sy)
                let ya = YUV(r: a.r, g: a.g, b: a.b), yb = YUV(r: b.r, g: b.g, b: b.b)
                let i = (y * width + x) * 2
                out[i] = ya.y; out[i + 2] = yb.y
                out[i + 1] = UInt8((Int(ya.u) + Int(yb.u)) / 2)
                out[i + 3] = UInt8((Int(ya.v) + Int(yb.v)) / 2)
            }
        }
        return out
    }
}
