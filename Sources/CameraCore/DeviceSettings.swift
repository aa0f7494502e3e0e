// The device settings a session holds, in the shape SessionState reports them.

public struct Point: Sendable, Equatable, Codable {
    public var x: Double
    public var y: Double
    public init(x: Double, y: Double) { self.x = x; self.y = y }
    public static let center = Point(x: 0.5, y: 0.5)
    public static let zero = Point(x: 0, y: 0)
}

public struct ZoomSetting: Sendable, Equatable, Codable {
    /// What the viewer sees: `optical × digital`.
    public var factor: Double = 1
    public var min: Double = 1
    public var max: Double = 1
    public var ramping = false
    /// The lens's part (the device's zoom control, read back); 1 where there is none.
    public var optical: Double = 1
    /// The crop's part, only beyond the optical range (or where there is no optical zoom).
    public var digital: Double = 1
    /// Where the crop is centred, in the sensor's coordinates (as AVFoundation's points of
    /// interest: before rotation and mirroring), as far as the frame allows at this zoom.
    public var center = Point.center
    /// The centre is moving (a continuous pan or tilt: ONVIF's ContinuousMove).
    public var panning = false
    public init() {}
}

public struct FocusSetting: Sendable, Equatable, Codable {
    public var mode = FocusMode.continuous
    public var lensPosition = 0.5
    public var point = Point.center
    public init() {}
}

public struct ExposureSetting: Sendable, Equatable, Codable {
    public var mode = ExposureMode.continuous
    public var duration = 1.0 / 60
    public var iso = 100.0
    public var bias = 0.0
    public var point = Point.center
    /// A lock's duration and ISO are values it holds — asked for, or what the camera had when
    /// it was locked from an automatic mode — not the placeholders above: the camera writes a
    /// held lock's values back after a stream-on, and the saved state keeps them. (Not in the
    /// state's JSON: the mode and the values say it.)
    public var held = false
    public init() {}

    private enum CodingKeys: String, CodingKey { case mode, duration, iso, bias, point }
}

public struct WhiteBalanceSetting: Sendable, Equatable, Codable {
    public var mode = WhiteBalanceMode.continuous
    public var temperature = 5500.0
    public init() {}
}

public struct TorchSetting: Sendable, Equatable, Codable {
    public var available = false
    public var mode = TorchMode.off
    public var level = 0.0
    public init() {}
}

public struct OrientationSetting: Sendable, Equatable, Codable {
    public var rotation = 0
    public var mirrored = false
    public init() {}
}

public struct DeviceSettings: Sendable, Equatable, Codable {
    public var zoom = ZoomSetting()
    public var focus = FocusSetting()
    public var exposure = ExposureSetting()
    public var whiteBalance = WhiteBalanceSetting()
    public var torch = TorchSetting()
    public var orientation = OrientationSetting()
    /// The camera's own controls set by key (`POST …/session/controls`: brightness, contrast,
    /// power-line frequency…) that no setting above stands for, by key, as read back. The
    /// device writes them again with the rest after every stream-on, so a replugged camera or
    /// a format change keeps them as it keeps focus or exposure.
    public var controls: [String: Int] = [:]
    public init() {}

    /// Defaults for a camera: ranges and availability from its capabilities.
    public init(for caps: Capabilities) {
        zoom.min = caps.zoom.min
        zoom.max = caps.zoom.max
        focus.mode = caps.focusModes.contains(.continuous) ? .continuous : caps.focusModes.first ?? .locked
        exposure.mode = caps.exposureModes.contains(.continuous) ? .continuous : caps.exposureModes.first ?? .locked
        whiteBalance.mode = caps.whiteBalanceModes.contains(.continuous) ? .continuous : caps.whiteBalanceModes.first ?? .locked
        torch.available = caps.torch
    }
}

/// One settings call as the camera sees it: from what the device has to what the session
/// wants. The camera writes only what differs.
public struct SettingsChange: Sendable, Equatable {
    /// What the device has now (its last read back); nil when unknown, e.g. right after
    /// stream-on or a replug, when everything is written.
    public var old: DeviceSettings?
    public var new: DeviceSettings
    /// A focus request in `auto` mode runs the autofocus once, even if the mode was auto.
    public var runAutoFocus: Bool

    public init(old: DeviceSettings?, new: DeviceSettings, runAutoFocus: Bool = false) {
        self.old = old
        self.new = new
        self.runAutoFocus = runAutoFocus
    }
}
