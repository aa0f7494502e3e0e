// The size, rate and pixel format a camera streams at, and the formats it offers.

public struct VideoFormat: Sendable, Equatable, Codable {
    public var pixelFormat: PixelFormat
    public var width: Int
    public var height: Int
    public var fps: Int

    public init(pixelFormat: PixelFormat, width: Int, height: Int, fps: Int) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.fps = fps
    }

    public var frameInterval: Double { 1.0 / Double(max(fps, 1)) }
}

/// One entry of a camera's format list: a size with the rates it supports there.
public struct FormatOption: Sendable, Equatable, Codable {
    public var pixelFormat: PixelFormat
    public var width: Int
    public var height: Int
    public var fps: [Int]

    public init(pixelFormat: PixelFormat, width: Int, height: Int, fps: [Int]) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.fps = fps
    }
}

/// AVCaptureSession.Preset's Linux cousin: a name that maps to the closest supported size.
public enum Preset: Sendable, Equatable {
    case photo, high, medium, low
    case size(width: Int, height: Int)

    public static let names = ["photo", "high", "medium", "low", "352x288", "640x480",
                               "1280x720", "1920x1080", "3840x2160"]

    public init?(_ name: String) {
        switch name {
        case "photo": self = .photo
        case "high": self = .high
        case "medium": self = .medium
        case "low": self = .low
        default:
            guard Preset.names.contains(name) else { return nil }
            let parts = name.split(separator: "x").compactMap { Int($0) }
            self = .size(width: parts[0], height: parts[1])
        }
    }

    /// A size a prepare asked for, as the session reports it (`"800x600"`): kept as the
    /// current preset, so a later prepare that names no size keeps it.
    public init?(size name: String) {
        let parts = name.split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0 else { return nil }
        self = .size(width: w, height: h)
    }

    /// The target size before matching against what a camera offers.
    var target: (width: Int, height: Int)? {
        switch self {
        case .photo: nil  // the largest the camera has
        case .high: (1280, 720)
        case .medium: (640, 480)
        case .low: (352, 288)
        case .size(let w, let h): (w, h)
        }
    }

    /// The supported option closest to this preset: exact size if offered, else the one
    /// whose pixel count is nearest (ties go to the larger).
    public func choose(from options: [FormatOption]) -> FormatOption? {
        guard let target else {
            return options.max { $0.width * $0.height < $1.width * $1.height }
        }
        let want = target.width * target.height
        return options.min { a, b in
            let da = abs(a.width * a.height - want), db = abs(b.width * b.height - want)
            return da != db ? da < db : a.width * a.height > b.width * b.height
        }
    }
}
