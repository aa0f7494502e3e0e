// The device-setting calls' parameters, already type-checked by the HTTP layer; the
// session checks them against the camera's capabilities.

import CameraCore

public struct ZoomRequest: Sendable {
    public var factor: Double
    public var rate: Double?
    /// Where the crop is centred (the sensor's coordinates, 0…1); nil leaves it.
    public var center: Point?
    public init(factor: Double, rate: Double? = nil, center: Point? = nil) {
        self.factor = factor; self.rate = rate; self.center = center
    }
}

/// A continuous move (ONVIF's ContinuousMove): the crop's centre at `velocity` (the source's
/// coordinates a second) and the zoom toward its end at `zoomRate` doublings a second
/// (negative: out), for `duration` seconds or until stopped.
public struct MoveRequest: Sendable {
    public var velocity: Point
    public var zoomRate: Double
    public var duration: Double
    public init(velocity: Point, zoomRate: Double = 0, duration: Double) {
        self.velocity = velocity; self.zoomRate = zoomRate; self.duration = duration
    }
}

public struct FocusRequest: Sendable {
    public var mode: String?
    public var lensPosition: Double?
    public var point: Point?
    public init(mode: String?, lensPosition: Double? = nil, point: Point? = nil) {
        self.mode = mode; self.lensPosition = lensPosition; self.point = point
    }
}

public struct ExposureRequest: Sendable {
    public var mode: String?
    public var duration: Double?
    public var iso: Double?
    public var bias: Double?
    public var point: Point?
    public init(mode: String?, duration: Double? = nil, iso: Double? = nil, bias: Double? = nil, point: Point? = nil) {
        self.mode = mode; self.duration = duration; self.iso = iso; self.bias = bias; self.point = point
    }
}

public struct WhiteBalanceRequest: Sendable {
    public var mode: String?
    public var temperature: Double?
    public init(mode: String?, temperature: Double? = nil) { self.mode = mode; self.temperature = temperature }
}

public struct TorchRequest: Sendable {
    public var mode: String
    public var level: Double?
    public init(mode: String, level: Double? = nil) { self.mode = mode; self.level = level }
}

public struct OrientationRequest: Sendable {
    public var rotation: Int
    public var mirrored: Bool?
    public init(rotation: Int, mirrored: Bool? = nil) { self.rotation = rotation; self.mirrored = mirrored }
}
