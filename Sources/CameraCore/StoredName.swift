// The names stored outputs (photos, movies) are filed under: built from digits and a camera
// id, so nothing in one can climb out of its directory; and the time they carry, as the
// API spells it.

import Foundation

public enum StoredName {
    /// A camera id that can be part of a file name as it is: letters, digits, `_`, `.` and
    /// `-`, not starting with a dot, at most 96 characters.
    public static func isSafe(camera: String) -> Bool {
        (1...96).contains(camera.count) && !camera.hasPrefix(".")
            && camera.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "_.-".unicodeScalars.contains($0)) }
    }

    /// Digits only, 1 to 20 of them (microseconds since 1970 fit).
    public static func isNumber(_ s: Substring) -> Bool {
        (1...20).contains(s.count) && s.allSatisfy { ("0"..."9").contains($0) }
    }

    /// ISO 8601 in UTC with milliseconds, as every time in the API.
    public static func iso8601(_ t: Double) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        f.timeZone = TimeZone(identifier: "UTC")
        return f.string(from: Date(timeIntervalSince1970: t))
    }
}
