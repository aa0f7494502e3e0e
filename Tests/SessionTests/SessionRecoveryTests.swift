// Recovery from a camera that opens but stays dark: the session says `interrupted` once,
// tries again with a growing wait, and says `running` only when frames come again. Before,
// every reopen said `running` for one capture timeout, so event clients and the page saw the
// state flip every few seconds while the camera delivered nothing.

import CameraCore
import Foundation
import Locking
import Testing
@testable import Session

/// A camera modelled on V4L2Camera's loss handling: while `lit` it delivers 30 frames a second;
/// dark (every buffer dropped, a stalled USB link), it delivers nothing, and after `timeout`
/// without a frame it stops, closes and reports the loss through the interruption handler,
/// as the capture loop does with "no frame in N s". Opening always succeeds.
final class DarkeningCamera: CaptureDevice, Sendable {
    let descriptor = CameraDescriptor(id: "dark", name: "Darkening camera", position: .external, kind: .v4l2)
    let formats = [FormatOption(pixelFormat: .yuyv, width: 352, height: 288, fps: [30])]
    let capabilities = Capabilities.fixed
    let timeout = 0.3

    private struct State {
        var lit = true
        var running = false
        var opens: [Date] = []
        var interrupted: (@Sendable (CameraError) -> Void)?
    }
    private let state = Locked(State())
    private let done = DispatchSemaphore(value: 0)

    var lit: Bool {
        get { state.withLock { $0.lit } }
        set { state.withLock { $0.lit = newValue } }
    }
    /// When each start (open and stream-on) happened.
    var opens: [Date] { state.withLock { $0.opens } }

    func setInterruptionHandler(_ handler: @escaping @Sendable (CameraError) -> Void) {
        state.withLock { $0.interrupted = handler }
    }

    func start(format: VideoFormat, handler: @escaping FrameHandler) throws(CameraError) {
        stop()
        state.withLock { $0.running = true; $0.opens.append(Date()) }
        let timeout = self.timeout
        Thread { [self] in
            let frame = [UInt8](repeating: 128, count: 352 * 288 * 2)
            var sequence: UInt64 = 0, lastFrame = Date()
            while true {
                let (running, lit) = state.withLock { ($0.running, $0.lit) }
                guard running else { break }
                if lit {
                    frame.withUnsafeBytes {
                        handler(RawFrame(format: format, bytes: $0, stride: 704, sequence: sequence, timestamp: Clock.now()))
                    }
                    sequence += 1
                    lastFrame = Date()
                } else if Date().timeIntervalSince(lastFrame) >= timeout {
                    // Lost: delivery stops and the device is closed before the handler hears of it.
                    let report = state.withLock { s -> (@Sendable (CameraError) -> Void)? in
                        s.running = false
                        return s.interrupted
                    }
                    report?(.unavailable("dark: no frame in \(timeout) s"))
                    break
                }
                usleep(33_000)
            }
            done.signal()
        }.start()
    }

    func stop() {
        let was = state.withLock { s -> Bool in defer { s.running = false }; return s.running }
        if was { done.wait() }
    }
}

@Suite(.serialized) struct SessionRecoveryTests {
    /// Every `state` event of the session from its creation, in order.
    final class StateLog: Sendable {
        let hub: EventHub
        init(_ hub: EventHub) { self.hub = hub; hub.subscribe(ObjectIdentifier(self), initial: []) }
        deinit { hub.unsubscribe(ObjectIdentifier(self)) }
        private let seen = Locked<[SessionState.Run]>([])

        /// The states published so far.
        var states: [SessionState.Run] {
            seen.withLock { seen in
                while let e = hub.next(ObjectIdentifier(self), wake: {}) { if case .state(let s) = e { seen.append(s.state) } }
                return seen
            }
        }
    }

    /// Waits (bounded, polled every 10 ms) until `done` holds.
    func eventually(_ timeout: Double = 10, _ done: () async -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if await done() { return true }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        return await done()
    }

    @Test func aCameraThatOpensButStaysDarkIsInterruptedOnceUntilFramesReturn() async throws {
        let camera = DarkeningCamera(), events = EventHub()
        let s = try CaptureSession(cameras: [camera], configuration: SessionConfiguration(preset: "352x288"), events: events)
        let log = StateLog(events)
        try await s.start()
        #expect(await s.state().state == .running)

        camera.lit = false
        #expect(await eventually { log.states.contains(.interrupted) }, "lost after the capture timeout: \(log.states)")
        let lostAt = log.states.firstIndex(of: .interrupted)!
        // Three reopens that stayed dark (the first loss's open is the start's).
        #expect(await eventually { camera.opens.count >= 4 }, "reopened: \(camera.opens.count)")
        let dark = await s.state()
        #expect(dark.state == .interrupted && !dark.online && dark.error?.contains("no frame") == true, "\(dark)")
        #expect(!log.states[lostAt...].contains(.running), "never `running` without a frame: \(log.states)")
        // The wait between attempts grows (0.25, 0.5, 1 s after each timeout), not reset by every reopen.
        let o = camera.opens, gaps = zip(o.dropFirst(), o.dropFirst(2)).map { $1.timeIntervalSince($0) }
        #expect(gaps.count >= 2 && gaps.last! > gaps.first!, "gaps between reopens: \(gaps)")

        camera.lit = true
        #expect(await eventually { await s.state().state == .running }, "back once frames come: \(log.states)")
        let back = await s.state()
        #expect(back.online && back.error == nil, "\(back)")
        #expect(log.states[lostAt...].filter { $0 == .interrupted }.count == 1 && log.states.last == .running,
                "one interruption, then running: \(log.states)")

        // A second loss goes the same way.
        let before = camera.opens.count
        camera.lit = false
        #expect(await eventually { camera.opens.count > before }, "reopened after the second loss")
        #expect(await s.state().state == .interrupted)
        await s.stop()
        #expect(await s.state().state == .idle)
    }

    /// A session stopped while its camera is reopened but dark closes the camera and stays
    /// stopped: no reopen after it.
    @Test func stoppingWhileWaitingForFramesClosesTheCamera() async throws {
        let camera = DarkeningCamera()
        let s = try CaptureSession(cameras: [camera], configuration: SessionConfiguration(preset: "352x288"))
        try await s.start()
        camera.lit = false
        #expect(await eventually { camera.opens.count >= 2 }, "reopened once")
        await s.stop()
        let opens = camera.opens.count
        // The next attempt was due within 0.8 s (its timeout, then a wait of at most 0.5 s).
        try await Task.sleep(nanoseconds: 1_200_000_000)
        #expect(camera.opens.count == opens, "no reopen after stop")
        #expect(await s.state().state == .idle)
        // Starting again opens it at once, even though it is dark (it is lost again after the timeout).
        camera.lit = true
        try await s.start()
        #expect(await s.state().state == .running)
        await s.stop()
    }
}
