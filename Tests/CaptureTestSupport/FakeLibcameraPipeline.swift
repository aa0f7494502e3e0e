// A libcamera camera behind LibcameraControlPort that behaves as a Raspberry Pi Camera Module 3
// (imx708) does on its pipeline: the facade's checks (a control the camera lacks, a number
// outside its range or not among an enumerated control's values are refused), a setting going
// into the next request queued, behind `depth` already in flight (so it is carried by a request
// completing `depth` frames later: what the facade's wait is for), reaching the sensor two
// frames after it was queued (its delay; the IPA schedules it so), the exposure
// time quantized to whole sensor lines and the gain to the sensor's gain codes, and the
// algorithms choosing for themselves while they are on — AE its exposure, AF a lens position
// after a scan, AWB a colour temperature — each reported in the completed request's metadata,
// and ScalerCrop cropped on the ISP's pitch and reported as the crop the frame was made with.
// Frames are stepped by the test (`frame()`), or by a wait for a setting to apply: as many as
// `fps` makes of its timeout, no more.

import Capture
import CameraCore
import Glibc
import SystemSupport

public final class FakeLibcameraPipeline: LibcameraControlPort, Sendable {
    /// The imx708's ControlInfoMap, as libcamera's rpi/vc4 handler gives it (ranges of a 1536x864 mode).
    public static let cameraModule3: [LibcameraControl] = [
        .init(id: 1, name: "AeEnable", type: .bool, range: 0...1, defaultValue: 1),
        .init(id: 5, name: "AeExposureMode", type: .int32, range: 0...3, defaultValue: 0, values: [0, 1, 2, 3]),
        .init(id: 6, name: "ExposureValue", type: .float, range: -8...8, defaultValue: 0),
        .init(id: 7, name: "ExposureTime", type: .int32, range: 26...220_417, defaultValue: 20_000),
        .init(id: 8, name: "AnalogueGain", type: .float, range: 1.112...16, defaultValue: 1),
        .init(id: 9, name: "Brightness", type: .float, range: -1...1, defaultValue: 0),
        .init(id: 10, name: "Contrast", type: .float, range: 0...32, defaultValue: 1),
        .init(id: 12, name: "AwbEnable", type: .bool, range: 0...1, defaultValue: 1),
        .init(id: 13, name: "AwbMode", type: .int32, range: 0...7, defaultValue: 0, values: Array(0...7)),
        .init(id: 15, name: "ColourGains", type: .float, range: 0...32),
        .init(id: 17, name: "Saturation", type: .float, range: 0...32, defaultValue: 1),
        .init(id: 19, name: "Sharpness", type: .float, range: 0...16, defaultValue: 1),
        .init(id: 22, name: "ScalerCrop", type: .rectangle, rectangleMax: [0, 0, 4608, 2592]),
        .init(id: 25, name: "FrameDurationLimits", type: .int64, range: 33_333...120_000_000),
        .init(id: 28, name: "AfMode", type: .int32, range: 0...2, defaultValue: 0, values: [0, 1, 2]),
        .init(id: 29, name: "AfRange", type: .int32, range: 0...2, defaultValue: 0, values: [0, 1, 2]),
        .init(id: 31, name: "AfMetering", type: .int32, range: 0...1, defaultValue: 0, values: [0, 1]),
        .init(id: 32, name: "AfWindows", type: .rectangle),
        .init(id: 33, name: "AfTrigger", type: .int32, range: 0...1, defaultValue: 0, values: [0, 1]),
        .init(id: 36, name: "LensPosition", type: .float, range: 0...32, defaultValue: 1),
    ]
    /// vimc's, as libcamera 0.0.3's vimc handler gives it (`cam --list-controls`).
    public static let vimc: [LibcameraControl] = [
        .init(id: 9, name: "Brightness", type: .float, range: -1...1, defaultValue: 0),
        .init(id: 10, name: "Contrast", type: .float, range: 0...2, defaultValue: 1),
        .init(id: 17, name: "Saturation", type: .float, range: 0...2, defaultValue: 1),
    ]

    /// Seconds per sensor line (the mode's line length over its pixel rate).
    public static let lineTime = 14.26e-6
    /// What AE settles on in the fake's scene, AF's lens after a scan, AWB's estimate.
    public static let aeExposure = 0.012, aeGain = 2.5, afLens = 2.2, awbTemperature = 4650.0
    /// Frames an autofocus scan takes.
    public static let scanFrames = 4
    /// Requests in flight ahead of a new setting, and the frame rate a wait is counted in.
    public static let depth = 4, fps = 30.0

    private struct State {
        var generation: Int64 = 0
        var pending: [(gen: Int64, name: String, values: [Double], due: Int)] = []
        var carrying: [(gen: Int64, completes: Int)] = []
        var applied: [String: [Double]] = [:]
        var metadata: [String: [Double]] = [:]
        var doneGeneration: Int64 = 0
        var frame = 0
        var scanning = 0
        var refuse: Set<String> = []
        var sets: [(String, [Double])] = []
    }
    private let controls: [String: LibcameraControl]
    private let state = Locked(State())

    public init(_ controls: [LibcameraControl] = FakeLibcameraPipeline.cameraModule3) {
        self.controls = Dictionary(uniqueKeysWithValues: controls.map { ($0.name, $0) })
    }

    /// Every set, in order.
    public var sets: [(String, [Double])] { state.withLock { $0.sets } }
    /// The value a control took on the sensor (what the frames are made with).
    public func applied(_ name: String) -> [Double]? { state.withLock { $0.applied[name] } }
    /// From now on, sets of `name` are refused as a stale range would be (ERANGE).
    public func refuse(_ name: String) { state.withLock { _ = $0.refuse.insert(name) } }

    public func set(_ name: String, _ values: [Double]) throws(CameraError) -> Int64 {
        guard let c = controls[name] else { throw .unsupportedControl(name, known: []) }
        return try state.withLock { s throws(CameraError) -> Int64 in
            let first = Int((values.first ?? 0).rounded())
            if s.refuse.contains(name) { throw .refused(control: name, value: first, errno: ERANGE) }
            for v in values {
                if let r = c.range, !r.contains(v) { throw .refused(control: name, value: first, errno: ERANGE) }
                if !c.values.isEmpty, !c.values.contains(Int(v)) { throw .refused(control: name, value: first, errno: ERANGE) }
            }
            if c.type == .rectangle ? values.count % 4 != 0 || values.isEmpty : values.count != 1 && name != "FrameDurationLimits" {
                throw .refused(control: name, value: first, errno: EINVAL)
            }
            s.generation += 1
            s.sets.append((name, values))
            // Queued into the next request: the sensor has it two frames later, the request that
            // carried it completes `depth` frames later.
            s.pending.append((s.generation, name, values, s.frame + 2))
            s.carrying.append((s.generation, s.frame + Self.depth))
            return s.generation
        }
    }

    public func get(_ name: String) -> LibcameraReading? {
        state.withLock { s in
            if let m = s.metadata[name] { return LibcameraReading(m, fromMetadata: true) }
            if let p = s.pending.last(where: { $0.name == name }) { return LibcameraReading(p.values, fromMetadata: false) }
            return s.applied[name].map { LibcameraReading($0, fromMetadata: false) }
        }
    }

    public func waitApplied(_ generation: Int64, timeout: Double) -> Bool {
        for _ in 0..<Int(timeout * Self.fps) {
            if state.withLock({ $0.doneGeneration >= generation }) { return true }
            frame()
        }
        return state.withLock { $0.doneGeneration >= generation }
    }

    /// One request completes: what was due reaches the sensor, the algorithms run, metadata
    /// reports what the frame was made with.
    public func frame() {
        state.withLock { s in
            s.frame += 1
            for c in s.carrying where c.completes <= s.frame { s.doneGeneration = max(s.doneGeneration, c.gen) }
            s.carrying.removeAll { $0.completes <= s.frame }
            for p in s.pending where p.due <= s.frame {
                s.applied[p.name] = p.values
                if p.name == "AfTrigger", p.values == [0], s.applied["AfMode"] == [1] { s.scanning = Self.scanFrames }
            }
            s.pending.removeAll { $0.due <= s.frame }
            func on(_ name: String) -> Bool { (s.applied[name] ?? controls[name]?.defaultValue.map { [$0] }) != [0] }

            let exposure = on("AeEnable") ? Self.aeExposure : (s.applied["ExposureTime"]?[0] ?? 20_000) / 1e6
            let gain = on("AeEnable") ? Self.aeGain : s.applied["AnalogueGain"]?[0] ?? 1
            s.metadata["ExposureTime"] = [((exposure / Self.lineTime).rounded(.down) * Self.lineTime * 1e6).rounded()]
            // imx708's gain code: 1024 - 1024 / gain, a whole number.
            s.metadata["AnalogueGain"] = [1024 / (1024 - (1024 - 1024 / gain).rounded())]
            s.metadata["ExposureValue"] = [s.applied["ExposureValue"]?[0] ?? 0]

            let afMode = Int(s.applied["AfMode"]?[0] ?? 0)
            if s.scanning > 0 {
                s.scanning -= 1
                s.metadata["AfState"] = [s.scanning > 0 ? 1 : 2]
                s.metadata["LensPosition"] = [s.scanning > 0 ? Self.afLens / 2 : Self.afLens]
            } else if afMode == 2 {
                s.metadata["LensPosition"] = [Self.afLens]
            } else if afMode == 0 {
                s.metadata["LensPosition"] = [s.applied["LensPosition"]?[0] ?? 1]
            }
            s.metadata["ColourTemperature"] = [on("AwbEnable") ? Self.awbTemperature : s.metadata["ColourTemperature"]?[0] ?? Self.awbTemperature]
            if let crop = s.applied["ScalerCrop"] { s.metadata["ScalerCrop"] = Self.ispCrop(crop) }
        }
    }

    /// The crop a frame is made with for a ScalerCrop asked: the ISP crops the binned mode
    /// (two of the sensor's pixels a mode pixel) on its Bayer pitch (two mode pixels: four of the
    /// sensor's), at least `minimumCrop` mode pixels each way, inside the array; metadata
    /// reports it back in the sensor's pixels.
    public static let minimumCrop = 32.0
    static func ispCrop(_ r: [Double]) -> [Double] {
        let array = [4608.0, 2592.0], pitch = 4.0
        func step(_ v: Double, _ rule: FloatingPointRoundingRule) -> Double { (v / pitch).rounded(rule) * pitch }
        let w = min(array[0], max(minimumCrop * 2, step(r[2], .toNearestOrAwayFromZero)))
        let h = min(array[1], max(minimumCrop * 2, step(r[3], .toNearestOrAwayFromZero)))
        let x = min(max(0, step(r[0], .down)), array[0] - w), y = min(max(0, step(r[1], .down)), array[1] - h)
        return [x, y, w, h]
    }
}
