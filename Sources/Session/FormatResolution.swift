// AVCaptureSession's preset matching: what `prepare` asks for, resolved against the formats
// a camera offers. A pure function, table-tested.

import CameraCore

/// What `prepare` may change; nil keeps the current value.
public struct PrepareRequest: Sendable, Equatable {
    public var camera: String?
    public var preset: String?
    public var width: Int?
    public var height: Int?
    public var fps: Int?
    public var pixelFormat: PixelFormat?

    public init(camera: String? = nil, preset: String? = nil, width: Int? = nil, height: Int? = nil,
                fps: Int? = nil, pixelFormat: PixelFormat? = nil) {
        self.camera = camera
        self.preset = preset
        self.width = width
        self.height = height
        self.fps = fps
        self.pixelFormat = pixelFormat
    }
}

public enum FormatResolution {
    /// The supported format closest to what is asked, and the preset name to report.
    public static func resolve(_ r: PrepareRequest, formats: [FormatOption], currentPreset: String,
                               currentFps: Int) throws(SessionError) -> (format: VideoFormat, preset: String) {
        var options = formats
        if let pf = r.pixelFormat {
            options = options.filter { $0.pixelFormat == pf }
            guard !options.isEmpty else {
                throw .unsupported("pixel format \(pf.rawValue)",
                                   supported: Array(Set(formats.map(\.pixelFormat.rawValue))).sorted())
            }
        }
        // A preset is checked even beside width and height (which win): a name that is not
        // one is refused, whatever else the request says.
        if let name = r.preset, Preset(name) == nil { throw .unsupported("preset '\(name)'", supported: Preset.names) }
        let presetName: String
        let preset: Preset
        if r.width != nil || r.height != nil {
            guard let w = r.width, let h = r.height, w > 0, h > 0 else {
                throw .invalidValue("width and height go together and must be positive")
            }
            presetName = "\(w)x\(h)"
            preset = .size(width: w, height: h)
        } else {
            presetName = r.preset ?? currentPreset
            // The current one may be a size an earlier prepare asked for: it stays.
            guard let p = Preset(presetName) ?? (r.preset == nil ? Preset(size: presetName) : nil) else {
                throw .unsupported("preset '\(presetName)'", supported: Preset.names)
            }
            preset = p
        }
        guard let option = preset.choose(from: options) else { throw .unsupported("no format", supported: []) }
        let wantFps = r.fps ?? currentFps
        guard wantFps > 0 else { throw .invalidValue("fps must be positive") }
        let fps = option.fps.min { abs($0 - wantFps) < abs($1 - wantFps) } ?? wantFps
        return (VideoFormat(pixelFormat: option.pixelFormat, width: option.width, height: option.height, fps: fps), presetName)
    }
}
