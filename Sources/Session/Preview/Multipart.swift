// multipart/x-mixed-replace framing for MJPEG, laid out as mjpg-streamer and µStreamer do:
// every part has Content-Type, Content-Length and X-Timestamp (go2rtc needs the length).
// The preview output frames each JPEG as it leaves the encoder (`framing`), so the part
// viewers are sent is made once per frame, by the copy that takes the JPEG out.

import JPEG

public enum Multipart {
    public static let boundary = "viewfinderframe"
    public static let contentType = "multipart/x-mixed-replace;boundary=\(boundary)"

    /// A part's headers for a JPEG of `count` bytes exposed at `timestamp` (`SECONDS.MICROS`).
    static func head(count: Int, timestamp: String) -> [UInt8] {
        Array("--\(boundary)\r\nContent-Type: image/jpeg\r\nContent-Length: \(count)\r\nX-Timestamp: \(timestamp)\r\n\r\n".utf8)
    }

    static let tail: [UInt8] = [13, 10]

    /// Lays a part's headers and trailing CRLF around a JPEG as the encoder emits it.
    static func framing(timestamp: String) -> JPEGFraming {
        JPEGFraming(head: { head(count: $0, timestamp: timestamp) }, tail: tail)
    }

    /// One whole part: headers, the JPEG and the trailing CRLF.
    public static func part(jpeg: [UInt8], timestamp: String) -> [UInt8] {
        jpeg.withUnsafeBytes { framing(timestamp: timestamp).wrap($0).bytes }
    }

    /// Splits a received multipart body into parts (for tests and clients): each part's
    /// headers (lower-cased names) and exactly Content-Length bytes of payload.
    public static func parse(_ data: [UInt8], boundary: String = boundary) -> (parts: [(headers: [String: String], body: [UInt8])], rest: Int) {
        var parts: [(headers: [String: String], body: [UInt8])] = []
        var i = 0
        let marker = Array("--\(boundary)\r\n".utf8)
        while true {
            guard let start = find(marker, in: data, from: i) else { break }
            guard let headerEnd = find([13, 10, 13, 10], in: data, from: start + marker.count) else { break }
            let headerText = String(decoding: data[(start + marker.count)..<headerEnd], as: UTF8.self)
            var headers: [String: String] = [:]
            for line in headerText.split(separator: "\r\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingPrefix(" ").description
            }
            guard let length = headers["content-length"].flatMap({ Int($0) }),
                  headerEnd + 4 + length <= data.count else { break }
            parts.append((headers, Array(data[(headerEnd + 4)..<(headerEnd + 4 + length)])))
            i = headerEnd + 4 + length
            if i + 2 <= data.count && data[i] == 13 && data[i + 1] == 10 { i += 2 }  // the part's CRLF
        }
        return (parts, i)
    }

    static func find(_ needle: [UInt8], in hay: [UInt8], from: Int) -> Int? {
        guard needle.count <= hay.count, from <= hay.count - needle.count else { return nil }
        var i = from
        while i <= hay.count - needle.count {
            if hay[i] == needle[0] && hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}
