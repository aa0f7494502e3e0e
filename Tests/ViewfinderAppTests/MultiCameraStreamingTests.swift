// Two cameras streaming at once, every frame counted: run apart from the parallel unit group
// (Makefile), with the suites that need every frame at 30 fps — beside ~60 other servers a
// viewer's newest-wins skips measure the machine, not the server.

import CaptureTestSupport
import Foundation
import Session
import Testing
@testable import ViewfinderApp

@Suite(.serialized) struct MultiCameraStreamingTests {
    func json(_ port: Int, _ method: String, _ path: String, _ body: String? = nil) async throws -> (Int, [String: Any]) {
        let r = try await fetch(port, method, path, body: body)
        return (r.status, r.json as? [String: Any] ?? [:])
    }

    /// Both cameras stream at the same time, each at its own size, and each viewer gets
    /// (nearly) every frame its camera published meanwhile: the two do not slow each other.
    /// The window is exact: from the frame that was newest at the start to the one newest at
    /// the end, each awaited at the viewer; the hub counts what was published in between.
    @Test func twoCamerasStreamAtOnceEachAtItsOwnSize() async throws {
        try await withServer({ MultiCameraTests.twoCameras(&$0); $0.session.autostart = false }) { app, port in
            #expect(try await json(port, "POST", "/api/cameras/rear/session/start").0 == 200)
            #expect(try await json(port, "POST", "/api/cameras/front/session/start").0 == 200)
            let rear = try TestConnection(port: port), front = try TestConnection(port: port)
            try rear.request("GET", "/cameras/rear/stream")
            try front.request("GET", "/cameras/front/stream")
            try await rear.read { Multipart.parse($0).parts.count >= 2 }
            try await front.read { Multipart.parse($0).parts.count >= 2 }
            let hubs = try ["rear", "front"].map { try app.cameras.session($0).hub }
            let viewers = [rear, front]
            func mark(_ i: Int) -> (count: UInt64, stamp: String) {
                (hubs[i].encodedFrames, hubs[i].latestFrame?.timestampString ?? "")
            }
            let first = (0..<2).map(mark)
            for i in 0..<2 { let m = first[i].stamp; try await viewers[i].read(timeout: 20) { MultiCameraTests.stamps($0).contains { $0 >= m } } }
            // A second and more of both: the window ends once each camera published 30 frames
            // (counted, not timed: under a sanitizer the cameras publish slower).
            // The rear viewer reads meanwhile (the front's parts wait in its socket's buffers).
            let firstCounts = first.map(\.count)
            try await rear.read(timeout: 20) { _ in (0..<2).allSatisfy { hubs[$0].encodedFrames >= firstCounts[$0] + 30 } }
            let last = (0..<2).map(mark)
            // A viewer may skip a frame (newest wins): wait for the last one or a later one.
            for i in 0..<2 { let m = last[i].stamp; try await viewers[i].read(timeout: 20) { MultiCameraTests.stamps($0).contains { $0 >= m } } }
            for i in 0..<2 {
                let got = Set(MultiCameraTests.stamps(viewers[i].body).filter { $0 > first[i].stamp && $0 <= last[i].stamp }).count
                let published = Int(last[i].count - first[i].count)
                #expect(published >= 20, "camera \(i) published \(published) frames")
                #expect(Double(got) >= 0.8 * Double(published), "camera \(i): \(got) of the \(published) frames published reached its viewer")
            }
            #expect(MultiCameraTests().size(Multipart.parse(rear.body).parts.last!.body) == "640x480")
            #expect(MultiCameraTests().size(Multipart.parse(front.body).parts.last!.body) == "352x288")
            let (_, cams) = try await json(port, "GET", "/api/cameras")
            let list = cams["cameras"] as? [[String: Any]] ?? []
            #expect(list.map { $0["state"] as? String } == ["running", "running"])
            #expect(list.map { $0["main"] as? Bool } == [true, false], "the rear camera is the main one")
        }
    }
}
