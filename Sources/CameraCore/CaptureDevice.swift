// The seam every camera sits behind: V4L2, synthetic, or a still image.

import SystemSupport

/// What a camera is, as `/api/cameras` lists it.
public struct CameraDescriptor: Sendable, Equatable, Codable {
    public enum Position: String, Sendable, Codable { case front, rear, external, unspecified }
    public enum Kind: String, Sendable, Codable { case v4l2, libcamera, synthetic, image }

    public var id: String
    public var name: String
    public var position: Position
    public var kind: Kind
    public var device: String?

    public init(id: String, name: String, position: Position, kind: Kind, device: String? = nil) {
        self.id = id
        self.name = name
        self.position = position
        self.kind = kind
        self.device = device
    }

    /// Which of `cameras` runs when none is named (the main session, a session's first camera):
    /// the rear one, else the first — AVCam's default. Nil only for an empty list.
    public static func defaultIndex(in cameras: [CameraDescriptor]) -> Int? {
        cameras.firstIndex { $0.position == .rear } ?? cameras.indices.first
    }
}

/// Receives each frame on the camera's capture thread. It must not keep `frame.bytes`.
public typealias FrameHandler = @Sendable (borrowing RawFrame) -> Void

/// A camera. Implementations own their capture thread; `start` returns once the first
/// frame can be expected, `stop` returns once no more frames will be delivered.
public protocol CaptureDevice: AnyObject, Sendable {
    var descriptor: CameraDescriptor { get }
    /// Formats the camera offers.
    var formats: [FormatOption] { get }
    /// Controls the camera offers.
    var capabilities: Capabilities { get }
    /// Opens the device and starts delivering frames in `format` to `handler`.
    func start(format: VideoFormat, handler: @escaping FrameHandler) throws(CameraError)
    /// Stops delivery and releases the device. Idempotent.
    func stop()
    /// Puts the device from `change.old` into `change.new` (validated by the session):
    /// writes only what differs, in the order the hardware needs, and answers the settings
    /// as the device has them afterwards — read back after its clamping and stepping. The
    /// device's part of zoom is `zoom.optical`; the digital part and orientation are the
    /// pipeline's. A refused write throws `.refused` naming the control, after putting back
    /// what this change had already written.
    func apply(_ change: SettingsChange) throws(CameraError) -> DeviceSettings
    /// The settings as the device has them now, or nil when it cannot tell (not running):
    /// automatic modes move exposure time, gain, temperature and the lens on their own, and
    /// another program may change a control.
    func readBack(_ settings: DeviceSettings) -> DeviceSettings?
    /// Called (once per start, from the capture thread) when a running device is lost:
    /// unplugged, an I/O error, or no frame within the capture timeout. Delivery has
    /// stopped and the device is closed when it is called.
    func setInterruptionHandler(_ handler: @escaping @Sendable (CameraError) -> Void)
    /// Where the camera crops for the zoom itself (`capabilities.zoom.sensorCrop`): the
    /// transform the session wants now, asked as each frame is requested; each frame then says
    /// the crop it was made with (`RawFrame.crop`). Set before `start`.
    func setCropSource(_ source: @escaping @Sendable () -> FrameTransform)
    /// Every control of the device with its current value (V4L2: VIDIOC_QUERYCTRL).
    func controls() throws(CameraError) -> [DeviceControl]
    /// Sets controls by key (`brightness`, `zoom_absolute`…), clamped to their ranges, and
    /// answers those no setting stands for, as read back: the session keeps them in its
    /// settings' `controls`, and they are written again with the rest at every stream-on. (A
    /// setting's own control — `zoom_absolute` — shows in that setting when read back.)
    func setControls(_ values: [String: Int]) throws(CameraError) -> [String: Int]
    /// The writes the device refused when it put every setting back by itself (after its
    /// stream-on, or when a replugged camera came up at its defaults), oldest first; taking
    /// them empties the list. The settings read back show what the device kept instead.
    func takeRestoreRefusals() -> [CameraError]
    /// Frames the device produced broken since its last start, never handed to the handler
    /// (V4L2: flagged V4L2_BUF_FLAG_ERROR by the driver, shorter than the format, not a JPEG).
    var rejectedFrames: UInt64 { get }
}

extension CaptureDevice {
    /// Cameras that cannot be lost (synthetic, image) ignore the handler.
    public func setInterruptionHandler(_ handler: @escaping @Sendable (CameraError) -> Void) {}
    /// A camera that cannot crop itself leaves all of the zoom to the pipeline.
    public func setCropSource(_ source: @escaping @Sendable () -> FrameTransform) {}
    /// Synthetic and image cameras have no device controls.
    public func controls() throws(CameraError) -> [DeviceControl] { [] }
    public func setControls(_ values: [String: Int]) throws(CameraError) -> [String: Int] {
        if let k = values.keys.sorted().first { throw .unsupportedControl(k, known: []) }
        return [:]
    }
    /// A camera without controls accepts what the session validated against its capabilities.
    public func apply(_ change: SettingsChange) throws(CameraError) -> DeviceSettings { change.new }
    public func readBack(_ settings: DeviceSettings) -> DeviceSettings? { nil }
    public func takeRestoreRefusals() -> [CameraError] { [] }
    public var rejectedFrames: UInt64 { 0 }
}

public enum CameraError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A system call failed: `call` names it, `errno` is what it left.
    public static func system(call: String, errno: Int32) -> CameraError { .system(SystemError(call: call, errno: errno)) }

    /// A system call failed; the error names it and keeps its errno.
    case system(SystemError)
    case unsupportedFormat(String)
    case unavailable(String)
    case invalidImage(String)
    case unsupportedControl(String, known: [String])
    /// The device refused a control write: `control` is its key (v4l2-ctl's name), `errno`
    /// what the driver answered (EACCES: locked by an automatic mode; EILSEQ: the camera
    /// stalled it; EINVAL/ERANGE: a value it does not take).
    case refused(control: String, value: Int, errno: Int32)

    public var description: String {
        switch self {
        case .system(let e): e.description
        case .unsupportedFormat(let m): "unsupported format: \(m)"
        case .unavailable(let m): "camera unavailable: \(m)"
        case .invalidImage(let m): "invalid image: \(m)"
        case .unsupportedControl(let k, _): "no control '\(k)'"
        case .refused(let k, let v, let e): "the camera refused \(k)=\(v): \(String(cString: strerror(e))) (errno \(e))"
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
