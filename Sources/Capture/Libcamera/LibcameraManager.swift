// libcamera's camera manager, once per process (libcamera allows one): started at the first
// question and kept, so a camera opened later is one the manager already knows. Its cameras
// as descriptions, and the sizes each one's video stream offers as the formats a session
// chooses from — in the pixel formats Viewfinder's encoders take.

import CLibcamera
import CameraCore
import Foundation
import SystemSupport

/// A camera as libcamera's manager lists it.
public struct LibcameraCameraInfo: Sendable, Equatable {
    public var id: String
    public var model: String
    public var position: CameraDescriptor.Position
    /// Degrees the sensor is mounted at (libcamera's `Rotation`), nil when it does not say.
    public var rotation: Int?
    /// The sensor's pixel array (`PixelArraySize`), nil when it does not say.
    public var pixelArray: (width: Int, height: Int)?

    public static func == (a: Self, b: Self) -> Bool {
        a.id == b.id && a.model == b.model && a.position == b.position && a.rotation == b.rotation
            && a.pixelArray?.width == b.pixelArray?.width && a.pixelArray?.height == b.pixelArray?.height
    }
}

public final class LibcameraManager: Sendable {
    /// The process's manager; nil when libcamera could not start one (the error is logged by the caller).
    public static let shared: Result<LibcameraManager, CameraError> = {
        var handle: OpaquePointer?
        let r = lc_manager_start(&handle)
        guard r == 0, let handle else { return .failure(.system(call: "libcamera CameraManager::start", errno: -r)) }
        return .success(LibcameraManager(handle))
    }()

    nonisolated(unsafe) let handle: OpaquePointer  // the facade serializes what libcamera needs serialized

    private init(_ handle: OpaquePointer) { self.handle = handle }

    /// libcamera's version, as its git tag ("v0.0.3").
    public static var version: String { String(cString: lc_version()) }

    public func cameras() -> [LibcameraCameraInfo] {
        var count = 0
        _ = lc_manager_cameras(handle, nil, 0, &count)
        guard count > 0 else { return [] }
        var infos = [lc_camera_info](repeating: lc_camera_info(), count: count)
        guard lc_manager_cameras(handle, &infos, count, &count) == 0 else { return [] }
        return infos.map { i in
            LibcameraCameraInfo(id: Self.string(i.id), model: Self.string(i.model), position: Self.position(i.location),
                                rotation: i.rotation < 0 ? nil : Int(i.rotation),
                                pixelArray: i.pixel_width == 0 ? nil : (Int(i.pixel_width), Int(i.pixel_height)))
        }
    }

    /// The camera's video stream's sizes in the pixel formats the encoders take, at `fps`
    /// (libcamera gives no rate per size: the pipeline runs at what its sensor gives).
    public func formats(of id: String, fps: [Int] = [30]) throws(CameraError) -> [FormatOption] {
        var count = 0
        var r = lc_manager_formats(handle, id, nil, 0, &count)
        guard r == 0 || r == -ENOSPC else { throw .system(call: "libcamera generateConfiguration(\(id))", errno: -r) }
        var all = [lc_stream_format](repeating: lc_stream_format(), count: count)
        r = lc_manager_formats(handle, id, &all, count, &count)
        guard r == 0 else { throw .system(call: "libcamera generateConfiguration(\(id))", errno: -r) }
        return all.compactMap { f in
            Self.pixelFormat(fourcc: f.fourcc).map { FormatOption(pixelFormat: $0, width: Int(f.width), height: Int(f.height), fps: fps) }
        }
    }

    /// Whether a media-controller device other than a UVC webcam's is there: only then can
    /// libcamera have a camera Viewfinder would offer (a webcam stays V4L2), and only then is
    /// its manager started by `"cameras": "auto"` — started, libcamera's uvcvideo handler
    /// would hold every webcam's node open for the life of the process.
    public static func mediaBeyondWebcams(in dir: String = "/sys/bus/media/devices") -> Bool {
        let devices = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return devices.contains { d in
            // A media device sits on the media bus, not in a class: it has no `device` link,
            // but its real directory is under the device that made it (vimc.0, a USB interface).
            guard let real = try? Sys.realpath("\(dir)/\(d)") else { return false }
            let parent = (real as NSString).deletingLastPathComponent
            guard let driver = try? Sys.realpath("\(parent)/driver") else { return false }
            return (driver as NSString).lastPathComponent != "uvcvideo"
        }
    }

    static func position(_ location: Int32) -> CameraDescriptor.Position {
        switch Int(location) {
        case LC_LOCATION_FRONT: .front
        case LC_LOCATION_BACK: .rear
        case LC_LOCATION_EXTERNAL: .external
        default: .unspecified
        }
    }

    static func string<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { b in String(decoding: b.prefix { $0 != 0 }, as: UTF8.self) }
    }

    // DRM fourccs, as libcamera names formats. DRM names a packed RGB format by its order in a
    // little-endian word: BGR888 is R, G, B in memory (V4L2's RGB24), RGB888 is B, G, R.
    private static func drm(_ s: String) -> UInt32 {
        s.utf8.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }
    static let fourccs: [(UInt32, PixelFormat)] = [
        (drm("YUYV"), .yuyv), (drm("UYVY"), .uyvy), (drm("YVYU"), .yvyu), (drm("NV12"), .nv12), (drm("NV16"), .nv16),
        (drm("YU12"), .yu12), (drm("MJPG"), .mjpeg), (drm("BG24"), .rgb24), (drm("RG24"), .bgr24), (drm("R8  "), .grey),
    ]

    static func pixelFormat(fourcc: UInt32) -> PixelFormat? { fourccs.first { $0.0 == fourcc }?.1 }
    static func fourcc(_ format: PixelFormat) -> UInt32? { fourccs.first { $0.1 == format }?.0 }
}
