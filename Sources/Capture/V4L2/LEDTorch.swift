// A torch that is a Linux LED class device (/sys/class/leds/NAME), for boards whose
// camera has no V4L2 flash control: the brightness file takes 0…max_brightness.

import CameraCore
import Foundation
import SystemSupport

public struct LEDTorch: Sendable, Equatable {
    public let directory: String

    public init(name: String, base: String = "/sys/class/leds") {
        directory = base + "/" + name
    }

    public var available: Bool { (try? Sys.access(directory + "/brightness", W_OK)) != nil }

    var maxBrightness: Int {
        let text = (try? Sys.readText(directory + "/max_brightness")) ?? "1"
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 1
    }

    /// Level 0…1 onto 0…max_brightness.
    public func set(level: Double) throws(CameraError) {
        let value = Int((min(max(level, 0), 1) * Double(maxBrightness)).rounded())
        let path = directory + "/brightness"
        try V4L2Call.system { () throws(SystemError) in
            let fd = try Sys.open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)  // sysfs replaces anyway
            defer { try? Sys.close(fd, path) }
            try Sys.writeAll(fd, Array("\(value)\n".utf8), path)
        }
    }
}
