// `cameras[].timecode`: a synthetic camera configured with it draws its frames' capture time
// into the top rows, and a client reads it back from the decoded snapshot.

import Capture
import Foundation
import JPEG
import Testing
@testable import ViewfinderApp

@Suite struct TimecodeAPITests {
    @Test func aSnapshotCarriesTheCaptureTimeItIsStampedWith() async throws {
        try await withServer({ c in
            c.cameras = .list([Configuration.CameraEntry(id: "tc", source: .synthetic, position: "rear", timecode: true)])
            c.session.preset = "640x480"
        }) { _, port in
            _ = try await fetch(port, "POST", "/api/session/start")
            for _ in 0..<3 {
                let snap = try await fetch(port, "/snapshot")
                #expect(snap.status == 200)
                let rgb = try JPEGDecoder.decodeRGB(snap.body)
                let read = Timecode.read(width: rgb.width, height: rgb.height) { x, y in
                    let p = (y * rgb.width + x) * 3
                    return (299 * Int(rgb.pixels[p]) + 587 * Int(rgb.pixels[p + 1]) + 114 * Int(rgb.pixels[p + 2])) / 1000
                }
                let stamp = try #require(snap.headers["x-timestamp"].flatMap(Double.init))
                let ms = Int64((stamp * 1000).rounded(.down))
                // X-Timestamp is rounded to the microsecond: the millisecond may differ by one.
                #expect(read.map { abs(Int64($0.milliseconds) - ms) <= 1 } == true,
                        "timecode \(String(describing: read)) for X-Timestamp \(stamp)")
            }
        }
    }
}
