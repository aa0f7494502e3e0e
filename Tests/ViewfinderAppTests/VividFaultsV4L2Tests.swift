// Device faults on a real driver (issue 15 item 7): vivid's error-injection controls, each
// with the state or error the server gives, its recovery, and no fd, mapping or thread left.
//
// What vivid does (drivers/media/test-drivers/vivid): the reqbufs, qbuf and streamon
// injections are one-shot flags on the device — the next queue_setup (VIDIOC_REQBUFS with a
// count), buf_prepare (every VIDIOC_QBUF) or start_streaming (VIDIOC_STREAMON) answers EINVAL
// and clears the flag; inject_v4l2_buf_flag_error completes the next filled buffer with
// V4L2_BUF_FLAG_ERROR (one buffer); percentage_of_dropped_buffers skips filling that share
// of the frame ticks (the sequence moves on: gaps). inject_fatal_streaming_error and
// disconnect are covered by `lossGivesThePlaceholderThenRecoversWithTheSameSettings`.

import CaptureTestSupport
import Foundation
import HTTPServer
import JPEG
import Testing
@testable import ViewfinderApp
import Session

/// In V4L2Tests' serialized suite: vivid's nodes can be streamed by one test at a time.
extension V4L2Tests {
    /// This process's capture and encode threads (names as the kernel keeps them, 15 bytes).
    func cameraThreads() -> [String: Int] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        var names: [String: Int] = [:]
        for t in tasks {
            let comm = ((try? String(contentsOfFile: "/proc/self/task/\(t)/comm", encoding: .utf8)) ?? "")
                .trimmingCharacters(in: .whitespacesAndNewlines)
            if comm.hasPrefix("v4l2-") || comm.hasPrefix("platform-vivid") { names[comm, default: 0] += 1 }
        }
        return names
    }

    /// Open handles of video nodes in this process and the bytes of them mapped: bytes, not
    /// lines of /proc/self/maps, since the kernel merges adjacent mappings of one node.
    func videoUse() -> (fds: Int, mapped: Int) {
        // Read to the end: /proc files have no size, and a process with GStreamer's libraries
        // loaded has a long map (String(contentsOfFile:) stopped short of the video buffers).
        let data = FileHandle(forReadingAtPath: "/proc/self/maps")?.readDataToEndOfFile() ?? Data()
        let maps = String(decoding: data, as: UTF8.self).split(separator: "\n")
        let mapped = maps.filter { $0.contains("/dev/video") }.reduce(0) { sum, line in
            let range = line.prefix { $0 != " " }.split(separator: "-").compactMap { Int($0, radix: 16) }
            return sum + (range.count == 2 ? range[1] - range[0] : 0)
        }
        return (videoHandles().fds, mapped)
    }

    func errorBody(_ r: TestConnection) -> [String: Any] {
        (r.json as? [String: Any])?["error"] as? [String: Any] ?? [:]
    }

    /// Frames captured after `since` among the parts after `index`, once each (by X-Timestamp,
    /// the capture time): parts that were waiting unread in the socket do not count.
    func newFrames(_ viewer: TestConnection, after index: Int, since: Date) -> [(headers: [String: String], body: [UInt8])] {
        Self.newFrames(viewer.body, after: index, since: since)
    }

    static func newFrames(_ body: [UInt8], after index: Int, since: Date) -> [(headers: [String: String], body: [UInt8])] {
        var seen = Set<String>()
        return Multipart.parse(body).parts.dropFirst(index).filter { part in
            let t = part.headers["x-timestamp"] ?? ""
            return (Double(t) ?? 0) > since.timeIntervalSince1970 && seen.insert(t).inserted
        }
    }

    /// Waits (bounded) for `n` frames captured from now on to reach `viewer`; true when they came.
    func viewerGetsFrames(_ viewer: TestConnection, _ n: Int = 3, timeout: Double = 60) async throws -> Bool {
        let before = Multipart.parse(viewer.body).parts.count, since = Date()
        try await viewer.read(timeout: timeout) { Self.newFrames($0, after: before, since: since).count >= n }
        return newFrames(viewer, after: before, since: since).count >= n
    }

    /// A viewer on /stream that has had its first two parts.
    func watching(_ port: Int) async throws -> TestConnection {
        let viewer = try TestConnection(port: port)
        try viewer.request("GET", "/stream")
        try await viewer.read(timeout: 60) { Multipart.parse($0).parts.count >= 2 }
        return viewer
    }

    func sequence(_ port: Int) async throws -> Int {
        ((try await state(port))["frames"] as? [String: Any])?["sequence"] as? Int ?? -1
    }

    /// Frames a second reaching the viewers, measured over the next `n` (bounded).
    func rate(_ port: Int, over n: Int, timeout: Double = 60) async throws -> Double {
        let s0 = try await sequence(port), t0 = Date()
        let done = try await eventually(timeout: timeout) { try await sequence(port) >= s0 + n }
        try #require(done, "\(n) frames in \(timeout) s")
        return Double(try await sequence(port) - s0) / Date().timeIntervalSince(t0)
    }

    /// The `state` events of one camera as they arrive on /api/events.
    final class StateEvents: @unchecked Sendable {
        let connection: TestConnection
        init(_ port: Int, camera: String) async throws {
            connection = try TestConnection(port: port)
            try connection.request("GET", "/api/events?camera=\(camera)")
            try await connection.read { String(decoding: $0, as: UTF8.self).contains("\n\n") }
        }

        static func states(_ bytes: [UInt8]) -> [(state: String, error: String?)] {
            String(decoding: bytes, as: UTF8.self).components(separatedBy: "\n\n").compactMap { block in
                guard block.hasPrefix("event: state\n") else { return nil }
                let data = block.split(separator: "\n").filter { $0.hasPrefix("data: ") }.map { $0.dropFirst(6) }.joined(separator: "\n")
                guard let s = try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any] else { return nil }
                return (s["state"] as? String ?? "", s["error"] as? String)
            }
        }

        var states: [(state: String, error: String?)] { Self.states(connection.body) }

        /// Waits (bounded) until the states seen so far satisfy `done`.
        func wait(timeout: Double = 60, _ done: @escaping @Sendable ([(state: String, error: String?)]) -> Bool) async throws -> Bool {
            try await connection.read(timeout: timeout) { done(StateEvents.states($0)) }
            return done(states)
        }

        /// Waits (bounded) until the states after the first `seen` went `interrupted` and then
        /// `running` again: a loss the session recovered from by itself.
        func lostAndRecovered(after seen: Int) async throws -> Bool {
            try await wait { states in
                let after = states.dropFirst(seen)
                guard let lost = after.firstIndex(where: { $0.state == "interrupted" }) else { return false }
                return after[lost...].contains { $0.state == "running" }
            }
        }
    }

    static func call(_ fault: String) -> String {
        switch fault {
        case "inject_vidioc_reqbufs_error": "VIDIOC_REQBUFS"
        case "inject_vidioc_qbuf_error": "VIDIOC_QBUF"
        default: "VIDIOC_STREAMON"
        }
    }

    /// A one-shot REQBUFS or STREAMON failure while the running camera changes format: the
    /// call answers 503 naming the ioctl, the camera runs on at its old format (the session
    /// reopened it), and the next prepare works. (A QBUF injection cannot wait for a prepare
    /// here: the running stream's next re-queue takes it; see the test after the next.)
    @Test(arguments: ["inject_vidioc_reqbufs_error", "inject_vidioc_streamon_error"])
    func aOneShotFaultAtPrepareNamesTheCallAndTheOldFormatRunsOn(_ fault: String) async throws {
        let device = try #require(Self.devices.first)
        try await withVivid { _, port in
            let viewer = try await watching(port)
            let handles = videoUse(), threads = cameraThreads()
            #expect(handles.fds == 2 && handles.mapped >= 4 * 640 * 480 * 2, "a stream and a control handle, 4 buffers: \(handles)")

            try control(device, "\(fault)=1")
            let r = try await fetch(port, "POST", "/api/session/prepare", body: #"{"width": 320, "height": 180}"#)
            #expect(r.status == 503, "\(r.text)")
            #expect(errorBody(r)["code"] as? String == "camera_unavailable", "\(r.text)")
            #expect((errorBody(r)["message"] as? String)?.contains(Self.call(fault)) == true, "names the call: \(r.text)")

            let s = try await state(port)
            #expect(s["state"] as? String == "running" && s["online"] as? Bool == true, "\(s)")
            #expect((s["format"] as? [String: Any])?["width"] as? Int == 640, "the old format: \(s)")
            #expect(s["error"] is NSNull, "the camera runs: no error to show: \(s)")
            let before = Multipart.parse(viewer.body).parts.count, since = Date()
            #expect(try await viewerGetsFrames(viewer), "the viewer gets live frames again")
            let widths = newFrames(viewer, after: before, since: since).compactMap { try? JPEGDecoder.size(of: $0.body).width }
            #expect(widths.last == 640, "\(widths)")
            #expect(videoUse() == handles, "no leaked fd or mapping")
            #expect(await eventually(timeout: TestTime.patience) { cameraThreads() == threads }, "\(cameraThreads()) vs \(threads)")

            // One-shot: the same prepare now works.
            let again = try await fetch(port, "POST", "/api/session/prepare", body: #"{"width": 320, "height": 180}"#)
            #expect(again.status == 200, "\(again.text)")
            try await viewer.read(timeout: 60) {
                (try? JPEGDecoder.size(of: Multipart.parse($0).parts.last?.body ?? []).width) == 320
            }
            #expect((try? JPEGDecoder.size(of: Multipart.parse(viewer.body).parts.last?.body ?? []).width) == 320)
            // And back: the same handles and the same bytes mapped as before the fault.
            #expect(try await fetch(port, "POST", "/api/session/prepare", body: #"{"width": 640, "height": 480}"#).status == 200)
            #expect(videoUse() == handles, "\(videoUse()) vs \(handles)")
        }
    }

    /// Two faults in a row at a prepare: the new format fails (REQBUFS) and so does reopening
    /// the old one (STREAMON). The camera that ran a moment ago is then lost like an
    /// unplugged one — `interrupted` naming the call, the placeholder, reopened with backoff
    /// at the old format — not left `failed` with viewers on a stale frame flagged online.
    @Test func twoFaultsAtPrepareAreALossThatRecoversByItself() async throws {
        let device = try #require(Self.devices.first)
        try await withVivid { _, port in
            let events = try await StateEvents(port, camera: "platform-vivid-000")
            let viewer = try await watching(port)
            let handles = videoUse(), threads = cameraThreads()
            let seen = events.states.count

            try control(device, "inject_vidioc_reqbufs_error=1")
            try control(device, "inject_vidioc_streamon_error=1")
            let r = try await fetch(port, "POST", "/api/session/prepare", body: #"{"width": 320, "height": 180}"#)
            #expect(r.status == 503 && (errorBody(r)["message"] as? String)?.contains("VIDIOC_REQBUFS") == true, "\(r.text)")
            let recovered = try await events.lostAndRecovered(after: seen)
            #expect(recovered, "interrupted, then running: \(events.states.dropFirst(seen).map(\.state))")
            let lost = events.states.dropFirst(seen).first { $0.state == "interrupted" }
            #expect(lost?.error?.contains("VIDIOC_STREAMON") == true, "\(String(describing: lost?.error))")
            #expect(!events.states.dropFirst(seen).contains { $0.state == "failed" }, "\(events.states.map(\.state))")

            let s = try await state(port)
            #expect(s["state"] as? String == "running" && s["error"] is NSNull, "\(s)")
            #expect((s["format"] as? [String: Any])?["width"] as? Int == 640, "the old format: \(s)")
            let live = try await eventually(timeout: 60) { try await fetch(port, "/snapshot").headers["x-viewfinder-online"] == "true" }
            #expect(live, "live frames again")
            #expect(try await viewerGetsFrames(viewer))
            #expect(videoUse() == handles, "no leaked fd or mapping")
            #expect(await eventually(timeout: TestTime.patience) { cameraThreads() == threads }, "\(cameraThreads()) vs \(threads)")
        }
    }

    /// A one-shot REQBUFS, QBUF or STREAMON failure on the camera being switched to: the
    /// switch answers 503 naming the camera and the ioctl, the main camera never stopped,
    /// the other camera's own session says `failed` with the cause, and the next switch works.
    @Test(arguments: ["inject_vidioc_reqbufs_error", "inject_vidioc_qbuf_error", "inject_vidioc_streamon_error"])
    func aOneShotFaultOnTheOtherCameraFailsTheSwitchAndTheMainCameraRunsOn(_ fault: String) async throws {
        try #require(Self.devices.count >= 2, "needs --devices 2")
        try await withVivid { _, port in
            let viewer = try await watching(port)
            let handles = videoUse(), threads = cameraThreads()
            #expect(handles.fds == 2 && handles.mapped >= 4 * 640 * 480 * 2, "\(handles)")

            try control(Self.devices[1], "\(fault)=1")
            let r = try await fetch(port, "POST", "/api/session/switch")
            #expect(r.status == 503, "\(r.text)")
            #expect(errorBody(r)["code"] as? String == "camera_unavailable" && errorBody(r)["camera"] as? String == "platform-vivid-001",
                    "\(r.text)")
            #expect((errorBody(r)["message"] as? String)?.contains(Self.call(fault)) == true, "names the call: \(r.text)")

            let s = try await state(port)
            #expect((s["camera"] as? [String: Any])?["id"] as? String == "platform-vivid-000", "still the first camera: \(s)")
            #expect(s["state"] as? String == "running" && s["error"] is NSNull, "\(s)")
            let other = try #require(try await fetch(port, "/api/cameras/platform-vivid-001/session").json as? [String: Any])
            #expect(other["state"] as? String == "failed", "\(other)")
            #expect((other["error"] as? String)?.contains(Self.call(fault)) == true, "\(other)")
            #expect(try await viewerGetsFrames(viewer), "the viewer keeps getting live frames")
            #expect(videoUse() == handles, "the failed open left nothing: \(videoUse()) vs \(handles)")
            #expect(await eventually(timeout: TestTime.patience) { cameraThreads() == threads }, "\(cameraThreads()) vs \(threads)")

            // One-shot: the next switch goes through, and the viewer follows.
            let again = try await fetch(port, "POST", "/api/session/switch")
            #expect(again.status == 200, "\(again.text)")
            let now = try await state(port)
            #expect((now["camera"] as? [String: Any])?["id"] as? String == "platform-vivid-001" && now["state"] as? String == "running",
                    "\(now)")
            #expect(now["error"] is NSNull, "\(now)")
            #expect(try await viewerGetsFrames(viewer))
            #expect(videoUse() == handles, "one camera open, as before: \(videoUse()) vs \(handles)")
        }
    }

    /// A QBUF failure while streaming (the re-queue after a frame): the buffer is lost to the
    /// queue, so the stream ends like any loss — `interrupted` with the call named, the
    /// placeholder — and reopens by itself with the same settings.
    @Test func aQBUFFailureWhileStreamingIsALossThatRecoversByItself() async throws {
        let device = try #require(Self.devices.first)
        try await withVivid { _, port in
            let events = try await StateEvents(port, camera: "platform-vivid-000")
            let viewer = try await watching(port)
            #expect(try await fetch(port, "POST", "/api/session/orientation", body: #"{"rotation": 90}"#).status == 200)
            let handles = videoUse(), threads = cameraThreads()
            let seen = events.states.count

            try control(device, "inject_vidioc_qbuf_error=1")
            let recovered = try await events.lostAndRecovered(after: seen)
            #expect(recovered, "interrupted, then running: \(events.states.dropFirst(seen).map(\.state))")
            let lost = events.states.dropFirst(seen).first { $0.state == "interrupted" }
            #expect(lost?.error?.contains("VIDIOC_QBUF") == true, "the state names the call: \(String(describing: lost?.error))")

            let s = try await state(port)
            #expect(s["state"] as? String == "running" && s["online"] as? Bool == true && s["error"] is NSNull, "\(s)")
            #expect((s["orientation"] as? [String: Any])?["rotation"] as? Int == 90, "same settings")
            #expect(try await viewerGetsFrames(viewer), "the same viewer gets live frames again")
            #expect(try await fetch(port, "/snapshot").headers["x-viewfinder-online"] == "true")
            #expect(videoUse() == handles, "no leaked fd or mapping")
            #expect(await eventually(timeout: TestTime.patience) { cameraThreads() == threads }, "\(cameraThreads()) vs \(threads)")
        }
    }

    /// A buffer the driver completes with V4L2_BUF_FLAG_ERROR is given back to the driver
    /// unseen: counted in `frames.dropped` (exactly one: nobody watches, so nothing else is
    /// dropped), the session stays `running`, and the next frames are served.
    @Test func aBufferFlaggedAsAnErrorIsCountedNotServed() async throws {
        let device = try #require(Self.devices.first)
        try await withVivid { _, port in
            let events = try await StateEvents(port, camera: "platform-vivid-000")
            let dropped = { () async throws -> Int in ((try await state(port))["frames"] as? [String: Any])?["dropped"] as? Int ?? -1 }
            let d0 = try await dropped()
            #expect(d0 == 0, "a fresh camera has dropped nothing")
            let seen = events.states.count
            let handles = videoUse()

            try control(device, "inject_v4l2_buf_flag_error=1")
            let counted = try await eventually(timeout: 30) { try await dropped() == d0 + 1 }
            let d1 = try await dropped()
            #expect(counted, "frames.dropped \(d1), was \(d0)")
            let s = try await state(port)
            #expect(s["state"] as? String == "running" && s["online"] as? Bool == true, "\(s)")
            #expect(!events.states.dropFirst(seen).contains { $0.state != "running" }, "no interruption: \(events.states.map(\.state))")

            let viewer = try TestConnection(port: port)
            try viewer.request("GET", "/stream")
            #expect(try await viewerGetsFrames(viewer), "frames are served")
            #expect(videoUse() == handles)
        }
    }

    /// Dropped buffers lower the rate that reaches viewers (and that the state and metrics
    /// show); the session keeps running and serving; at 0% the rate comes back.
    @Test func droppedBuffersLowerTheRateAndTheStreamGoesOn() async throws {
        let device = try #require(Self.devices.first)
        try control(device, "percentage_of_dropped_buffers=0")
        defer { try? control(device, "percentage_of_dropped_buffers=0") }
        try await withVivid { _, port in
            // A small format: under software emulation the encoder keeps up with 15 fps.
            #expect(try await fetch(port, "POST", "/api/session/prepare", body: #"{"width": 320, "height": 180}"#).status == 200)
            let events = try await StateEvents(port, camera: "platform-vivid-000")
            let viewer = try await watching(port)
            let handles = videoUse()
            let full = try await rate(port, over: 20)
            let seen = events.states.count

            try control(device, "percentage_of_dropped_buffers=75")
            _ = try await rate(port, over: 3)  // frames already in flight
            let thinned = try await rate(port, over: 12)
            #expect(thinned < full * 0.6 && thinned > 0.5, "75% dropped: \(thinned) fps, was \(full)")
            let shown = try await eventually(timeout: 20) {
                let fps = ((try await state(port))["stream"] as? [String: Any])?["fps"] as? Double ?? -1
                let metric = try await fetch(port, "/metrics").text.split(separator: "\n")
                    .first { $0.hasPrefix(#"viewfinder_stream_fps{camera="platform-vivid-000"}"#) }
                    .flatMap { Double($0.split(separator: " ").last ?? "") } ?? -1
                return fps > 0 && fps < full * 0.6 && metric > 0 && metric < full * 0.6
            }
            #expect(shown, "the state and the metrics show the lower rate")
            #expect(try await viewerGetsFrames(viewer), "still serving")
            #expect(events.states.dropFirst(seen).allSatisfy { $0.state == "running" }, "\(events.states.map(\.state))")

            try control(device, "percentage_of_dropped_buffers=0")
            _ = try await rate(port, over: 3)
            let back = try await rate(port, over: 20)
            #expect(back > full * 0.7, "at 0%: \(back) fps, was \(full)")
            #expect((try await state(port))["state"] as? String == "running")
            #expect(videoUse() == handles)
        }
    }

    /// Every buffer dropped: no frame within the capture timeout is a loss (`interrupted`,
    /// the placeholder); the session keeps reopening, stays `interrupted` while the reopened
    /// camera delivers nothing (it used to say `running` for a timeout after every reopen), and
    /// runs again once frames return.
    @Test func everyBufferDroppedIsALossUntilFramesReturn() async throws {
        let device = try #require(Self.devices.first)
        try control(device, "percentage_of_dropped_buffers=0")
        defer { try? control(device, "percentage_of_dropped_buffers=0") }
        try await withVivid { _, port in
            let events = try await StateEvents(port, camera: "platform-vivid-000")
            let viewer = try await watching(port)
            let handles = videoUse(), threads = cameraThreads()
            let seen = events.states.count

            try control(device, "percentage_of_dropped_buffers=100")
            let lost = try await events.wait(timeout: 30) { $0.dropFirst(seen).contains { $0.state == "interrupted" } }
            #expect(lost, "no frame in the capture timeout: interrupted")
            let why = events.states.dropFirst(seen).first { $0.state == "interrupted" }?.error
            #expect(why?.contains("no frame") == true, "\(String(describing: why))")
            #expect(try await fetch(port, "/snapshot").headers["x-viewfinder-online"] == "false", "the placeholder")
            // Two reopens (after 0.25 s and 0.5 s, each dark for the 3 s timeout) fit in 8 s:
            // a window for what must not happen, not a wait for something.
            try await Task.sleep(nanoseconds: 8_000_000_000)
            let dark = events.states.dropFirst(seen).map(\.state)
            #expect(dark.filter { $0 == "interrupted" }.count == 1 && !dark.contains("running"),
                    "one interruption and no `running` while every buffer is dropped: \(dark)")
            #expect((try await state(port))["state"] as? String == "interrupted")

            try control(device, "percentage_of_dropped_buffers=0")
            // A running session's snapshot waits for a fresh frame: online only once one came.
            let live = try await eventually(timeout: 60) { try await fetch(port, "/snapshot").headers["x-viewfinder-online"] == "true" }
            #expect(live, "live frames again")
            #expect(try await viewerGetsFrames(viewer), "the same viewer gets them")
            let back = try await eventually(timeout: 30) {
                let s = try await state(port)
                return s["state"] as? String == "running" && s["error"] is NSNull
            }
            let last = try await state(port)
            #expect(back, "\(last)")
            #expect(await eventually(timeout: TestTime.patience) { videoUse() == handles }, "\(videoUse()) vs \(handles)")
            #expect(await eventually(timeout: TestTime.patience) { cameraThreads() == threads }, "\(cameraThreads()) vs \(threads)")
        }
    }
}
