// A libcamera control as the camera's ControlInfoMap describes it, and the seam the settings
// go through: set by name (a value of numbers, as the facade takes it), read back from the
// newest completed request's metadata, and a wait until a request carrying a setting has
// completed. The real port is the acquired camera (LibcameraHandle); tests put a pipeline
// that behaves as a Raspberry Pi's does behind the same seam.

import CLibcamera
import CameraCore
import Foundation

public struct LibcameraControl: Sendable, Equatable {
    /// libcamera's ControlType.
    public enum ValueType: Int32, Sendable { case none, bool, byte, int32, int64, float, string, rectangle, size }

    public var id: UInt32
    public var name: String
    public var type: ValueType
    /// The range (of each element, for an array); nil where the camera gives none.
    public var range: ClosedRange<Double>?
    public var defaultValue: Double?
    /// The values an enumerated control takes (AfMode's modes); empty for any other.
    public var values: [Int]
    /// A rectangle control's largest value (ScalerCrop's: the whole crop), x, y, width, height.
    public var rectangleMax: [Double]?

    public init(id: UInt32 = 0, name: String, type: ValueType, range: ClosedRange<Double>? = nil, defaultValue: Double? = nil,
                values: [Int] = [], rectangleMax: [Double]? = nil) {
        self.id = id; self.name = name; self.type = type; self.range = range; self.defaultValue = defaultValue
        self.values = values; self.rectangleMax = rectangleMax
    }

    init(_ c: lc_control_info) {
        var info = c
        let values = withUnsafeBytes(of: &info.values) { Array($0.bindMemory(to: Int32.self).prefix(Int(c.nvalues))) }
        let rect = withUnsafeBytes(of: &info.rect_max) { Array($0.bindMemory(to: Double.self)) }
        self.init(id: c.id, name: LibcameraManager.string(c.name), type: ValueType(rawValue: c.type) ?? .none,
                  range: c.has_range != 0 && c.min <= c.max ? c.min...c.max : nil, defaultValue: c.def.isNaN ? nil : c.def,
                  values: values.map(Int.init), rectangleMax: c.has_rect_max != 0 ? rect : nil)
    }
}

/// A control's value as read: its numbers, and whether they came from a completed request's
/// metadata (what the camera did) or are only the last value set (what it was told).
public struct LibcameraReading: Sendable, Equatable {
    public var values: [Double]
    public var fromMetadata: Bool
    public init(_ values: [Double], fromMetadata: Bool) { self.values = values; self.fromMetadata = fromMetadata }
}

public protocol LibcameraControlPort: Sendable {
    /// Sets `name` on the requests queued from now on; answers the setting's generation.
    /// Throws `.unsupportedControl` for a control the camera lacks, `.refused` for a value
    /// out of its range or of the wrong shape, naming the control.
    func set(_ name: String, _ values: [Double]) throws(CameraError) -> Int64
    /// The control's value (metadata first), nil when neither metadata nor a setting has it.
    func get(_ name: String) -> LibcameraReading?
    /// Waits at most `timeout` s until a request carrying every setting up to `generation`
    /// has completed; false on a timeout or when the camera stopped.
    func waitApplied(_ generation: Int64, timeout: Double) -> Bool
}

extension LibcameraManager {
    /// The controls a camera takes (its ControlInfoMap), without acquiring it.
    public func controls(of id: String) -> [LibcameraControl] {
        var count = 0
        var r = lc_manager_controls(handle, id, nil, 0, &count)
        guard r == 0 || r == -ENOSPC, count > 0 else { return [] }
        var all = [lc_control_info](repeating: lc_control_info(), count: count)
        r = lc_manager_controls(handle, id, &all, count, &count)
        return r == 0 ? all.prefix(count).map(LibcameraControl.init) : []
    }
}
