// Several cameras at once, without sockets: each camera's own session over a stateful
// webcam model at the ioctl seam, the main session as a pointer that shares a running one,
// and a second webcam that the USB bus cannot feed (ENOSPC at STREAMON).

import CV4L2
import CameraCore
import Capture
import CaptureTestSupport
import Foundation
import Glibc
import Testing
@testable import Session
import SystemSupport

@Suite(.serialized) struct MultiCamSessionTests {
    func camera(_ id: String, _ fake: FakeWebcam, position: CameraDescriptor.Position = .external) -> V4L2Camera {
        V4L2Camera(id: id, path: "/dev/\(id)", name: id, position: position,
                   formats: [FormatOption(pixelFormat: .yuyv, width: 640, height: 480, fps: [30])],
                   open: { path throws(CameraError) in try fake.open(path) })
    }

    func multi(_ cameras: [V4L2Camera]) throws -> MultiCamSession {
        let events = EventHub()
        let sessions = try cameras.map {
            try CaptureSession(camera: $0, configuration: SessionConfiguration(preset: "640x480", readBackInterval: 0.1), events: events)
        }
        return MultiCamSession(sessions: sessions, main: 0, events: events)
    }

    /// Two webcams on one USB 2 bus: the second one's STREAMON gets ENOSPC. Its start fails
    /// naming the call and the errno; the first camera streams on, untouched.
    @Test func aCameraTheBusCannotFeedFailsAndTheOtherStreamsOn() async throws {
        let nozzle = FakeWebcam.c920(), bed = FakeWebcam.c920()
        bed.failStreamOn(ENOSPC)
        let m = try multi([camera("nozzle", nozzle), camera("bed", bed)])
        let first = try m.session("nozzle"), second = try m.session("bed")
        _ = try await m.start(first)
        _ = try await first.zoom(ZoomRequest(factor: 2))
        await #expect(throws: SessionError.camera(.system(SystemError(call: "VIDIOC_STREAMON", errno: ENOSPC)))) {
            try await m.start(second)
        }
        #expect(await second.state().state == .failed)
        #expect(await first.state().state == .running)
        #expect(await first.state().zoom.optical == 2 && nozzle.value("zoom_absolute") == 200, "the other camera untouched")
        let before = first.hub.latestFrame?.sequence ?? 0
        let next = await first.hub.nextFrame(after: before, timeout: TestTime.patience * TestTime.scale)
        #expect(next != nil, "the first camera still delivers frames")
        // A smaller size or MJPEG is what helps; here the bus frees up.
        bed.failStreamOn(nil)
        _ = try await m.start(second)
        let (s2, s1) = (await second.state().state, await first.state().state)
        #expect(s2 == .running && s1 == .running)
        await m.stop(first); await m.stop(second)
    }

    /// Settings are per camera: a zoom and a white balance on one camera's session write
    /// only that camera's controls.
    @Test func aControlOnOneCameraLeavesTheOtherAlone() async throws {
        let a = FakeWebcam.c920(), b = FakeWebcam.c920()
        let m = try multi([camera("a", a), camera("b", b)])
        let sa = try m.session("a"), sb = try m.session("b")
        _ = try await m.start(sa); _ = try await m.start(sb)
        let bBefore = await sb.state()
        b.clearWrites()
        _ = try await sa.zoom(ZoomRequest(factor: 3))
        _ = try await sa.whiteBalance(WhiteBalanceRequest(mode: "locked", temperature: 3000))
        #expect(a.value("zoom_absolute") == 300 && a.value("white_balance_temperature") == 3000)
        #expect(b.writes.isEmpty, "nothing written to the other camera: \(b.writes)")
        #expect(b.value("zoom_absolute") == 100 && b.value("white_balance_automatic") == 1)
        let bAfter = await sb.state()
        #expect(bAfter.zoom == bBefore.zoom && bAfter.whiteBalance.mode == bBefore.whiteBalance.mode)
        await m.stop(sa); await m.stop(sb)
    }

    /// The main session shares a camera's running session (no second open: a V4L2 device
    /// is opened once) and keeps its settings; the camera it leaves stops unless it was
    /// started in its own right.
    @Test func switchingTheMainSessionSharesARunningCamera() async throws {
        let rear = FakeWebcam.c920(), front = FakeWebcam.c920()
        let m = try multi([camera("rear", rear, position: .rear), camera("front", front, position: .front)])
        let sr = try m.session("rear"), sf = try m.session("front")
        _ = try await sr.start()  // the main session's start: not pinned
        _ = try await m.start(sf)  // front in its own right
        _ = try await sf.zoom(ZoomRequest(factor: 3))
        let handles = front.openHandles
        let s = try await m.switchMain(to: nil)  // rear ↔ front
        #expect(s.camera?.id == "front" && s.main && s.zoom.factor == 3, "shared as it runs")
        #expect(front.openHandles == handles, "no second open of the running camera")
        #expect(m.mainID == "front")
        #expect(await sr.state().state == .idle, "the rear camera was only the main session's: stopped")
        let watcher = m.events.subscription(initial: [], camera: "front")
        watcher.attach {}
        defer { watcher.cancel() }
        _ = try await m.switchMain(to: "rear")
        #expect(await sr.state().state == .running && m.mainID == "rear")
        #expect(await sf.state().state == .running, "front was started in its own right: it keeps running")
        var frontStates: [SessionState] = []
        while case .item(let e) = watcher.next() { if case .state(let st) = m.marked(e) { frontStates.append(st) } }
        #expect(frontStates.last?.main == false && frontStates.last?.state == .running,
                "front's own subscribers hear that it is no longer main: \(frontStates.map(\.main))")
        await #expect(throws: SessionError.unknownCamera("nope", known: ["rear", "front"])) { try await m.switchMain(to: "nope") }
        #expect(m.mainID == "rear")
        await m.stop(sr); await m.stop(sf)
    }

    /// A switch to a camera that cannot start leaves the main session where it was.
    @Test func aFailedSwitchLeavesTheMainSessionWhereItWas() async throws {
        let a = FakeWebcam.c920(), b = FakeWebcam.c920()
        b.failStreamOn(ENOSPC)
        let m = try multi([camera("a", a), camera("b", b)])
        let sa = try m.session("a")
        _ = try await sa.start()
        await #expect(throws: SessionError.switchFailed(id: "b", cause: .system(SystemError(call: "VIDIOC_STREAMON", errno: ENOSPC)))) {
            try await m.switchMain(to: "b")
        }
        let run = await sa.state().state
        #expect(m.mainID == "a" && run == .running)
        await m.stop(sa)
    }

    /// One hub carries every camera's events; a newer state supersedes an older one of the
    /// same camera only, and a subscriber may take one camera's events.
    @Test func eventsNameTheirCameraAndFilter() async throws {
        let a = FakeWebcam.c920(), b = FakeWebcam.c920()
        let m = try multi([camera("a", a), camera("b", b)])
        let all = m.events.subscription(initial: []), onlyB = m.events.subscription(initial: [], camera: "b")
        all.attach {}
        onlyB.attach {}
        defer { all.cancel(); onlyB.cancel() }
        _ = try await m.start(try m.session("a"))
        _ = try await m.start(try m.session("b"))
        func drain(_ o: EventSubscription) -> [SessionEvent] {
            var out: [SessionEvent] = []
            while case .item(let e) = o.next() { out.append(e) }
            return out
        }
        let seen = drain(all), seenB = drain(onlyB)
        #expect(Set(seen.compactMap(\.camera)) == ["a", "b"], "both cameras' newest states are kept: \(seen.map(\.camera))")
        #expect(!seenB.isEmpty && seenB.allSatisfy { $0.camera == "b" })
        if case .state(let s)? = seen.first(where: { $0.camera == "a" }).map(m.marked) { #expect(s.main) }
        if case .state(let s)? = seen.first(where: { $0.camera == "b" }).map(m.marked) { #expect(!s.main) }
        await m.stop(try m.session("a")); await m.stop(try m.session("b"))
    }

    /// Following the main camera is one mechanism for every client: a switch tells an MJPEG
    /// viewer's subscription and a live client's (an RTSP media's, a WHEP peer's) alike, at
    /// once — by the time the switch returns, the live client is the new camera's and the old
    /// camera has none; the viewer is the new camera's from its next part.
    @Test func everyKindOfMainClientMovesAtOnceOnASwitch() async throws {
        let rear = FakeWebcam.c920(), front = FakeWebcam.c920()
        let m = try multi([camera("rear", rear, position: .rear), camera("front", front, position: .front)])
        let r = try m.session("rear"), f = try m.session("front")
        _ = try await r.start()
        // Pumped as Streaming's FeedPump pumps it: woken, it takes what there is.
        let live = m.mainFeed.liveUnits(kind: "rtsp")
        live.attach { [live] in while case .item = live.next() {} }
        let viewer = m.mainFeed.preview(maxFps: 0)
        viewer.attach {}
        // A WebRTC peer's sound, which the feed moves itself, beside the hubs' clients.
        let sound = m.mainFeed.sound(.opus)
        sound.attach {}
        #expect(sound.session == ObjectIdentifier(r))
        #expect(r.hub.viewerCount == 1 && r.live.clientCounts["rtsp"] == 1 && !f.live.hasClients)
        _ = try await m.switchMain(to: "front")
        #expect(f.live.clientCounts["rtsp"] == 1 && !r.live.hasClients, "the live client is the front camera's the moment the switch returns")
        #expect(sound.session == ObjectIdentifier(f), "the sound was on the front camera by the time the switch returned")
        _ = viewer.next()
        #expect(f.hub.viewerCount == 1 && r.hub.viewerCount == 0, "the MJPEG viewer follows at its next pull")
        // A camera's own feed never moves.
        let own = SessionFeed(f).preview(maxFps: 0)
        own.attach {}
        _ = try await m.switchMain(to: "rear")
        _ = own.next()
        _ = viewer.next()
        #expect(f.hub.viewerCount == 1 && r.hub.viewerCount == 1, "a camera's own viewer stays; the main one came back")
        #expect(r.live.clientCounts["rtsp"] == 1 && !f.live.hasClients)
        #expect(sound.session == ObjectIdentifier(r))
        sound.cancel()
        _ = try await m.switchMain(to: "front")
        #expect(sound.session == nil, "a cancelled sound follows no more")
        _ = try await m.switchMain(to: "rear")
        _ = viewer.next()
        live.cancel(); viewer.cancel(); own.cancel()
        #expect(r.hub.viewerCount == 0 && f.hub.viewerCount == 0 && !r.live.hasClients)
        await m.stop(r); await m.stop(f)
    }
}
