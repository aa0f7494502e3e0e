// Recovery from a camera that opens but stays dark: the session says `interrupted` once,
// tries again with a growing wait, and says `running` only when frames come again. Before,
// every reopen said `running` for one capture timeout, so event clients and the page saw the
// state flip every few seconds while the camera delivered nothing.

import CameraCore
import CaptureTestSupport
import Foundation
import SystemSupport
import Testing
@testable import Session

/// A camera modelled on V4L2Camera's loss handling: while `lit` it delivers 30 frames a second;
/// dark (every buffer dropped, a stalled USB link), it delivers nothing, and after `timeout`
/// without a frame it stops, closes and reports the loss through the interruption handler,
/// as the capture loop does with "no frame in N s". Opening always succeeds. Its settings
/// read back unchanged, counted (the session reads them back while running).
final class DarkeningCamera: CaptureDevice, Sendable {
    let descriptor: CameraDescriptor
    let formats = [FormatOption(pixelFormat: .yuyv, width: 352, height: 288, fps: [30])]
    let capabilities = Capabilities.fixed
    /// How long it waits for a frame, read at each start (a test that must not race the
    /// fake's own timeout lengthens it before a reopen).
    var timeout: Double {
        get { state.withLock { $0.timeout } }
        set { state.withLock { $0.timeout = newValue } }
    }

    private struct State {
        var timeout = 0.3
        var lit = true
        var running = false
        var opens = 0
        var interrupted: (@Sendable (CameraError) -> Void)?
        var readBacks = 0
        /// Signalled by the running capture thread as it ends (one per start).
        var done: DispatchSemaphore?
    }
    private let state = Locked(State())

    init(id: String = "dark") {
        descriptor = CameraDescriptor(id: id, name: "Darkening camera \(id)", position: .external, kind: .v4l2)
    }

    var lit: Bool {
        get { state.withLock { $0.lit } }
        set { state.withLock { $0.lit = newValue } }
    }
    /// How many starts (open and stream-on) there were. (A count read inside the lock: an array
    /// handed out of it would race its next append as far as ThreadSanitizer can tell.)
    var opens: Int { state.withLock { $0.opens } }
    /// Open and streaming (lit or dark).
    var isRunning: Bool { state.withLock { $0.running } }
    var readBacks: Int { state.withLock { $0.readBacks } }

    func readBack(_ settings: DeviceSettings) -> DeviceSettings? {
        state.withLock { s in
            guard s.running else { return nil }
            s.readBacks += 1
            return settings
        }
    }

    func setInterruptionHandler(_ handler: @escaping @Sendable (CameraError) -> Void) {
        state.withLock { $0.interrupted = handler }
    }

    func start(format: VideoFormat, handler: @escaping FrameHandler) throws(CameraError) {
        stop()
        let done = DispatchSemaphore(value: 0)
        state.withLock { $0.running = true; $0.opens += 1; $0.done = done }
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
                        s.done = nil  // ended by itself: nobody will wait for this thread
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
        let done = state.withLock { s -> DispatchSemaphore? in
            defer { s.running = false; s.done = nil }
            return s.running ? s.done : nil
        }
        done?.wait()
    }
}

@Suite(.serialized) struct SessionRecoveryTests {
    /// Every `state` event of the session from its creation, in order.
    final class StateLog: Sendable {
        let events: EventSubscription
        init(_ hub: EventHub) { events = hub.subscription(initial: []); events.attach {} }
        deinit { events.cancel() }
        private let seen = Locked<[SessionState.Run]>([])

        /// The states published so far.
        var states: [SessionState.Run] {
            seen.withLock { seen in
                while case .item(let e) = events.next() { if case .state(let s) = e { seen.append(s.state) } }
                return seen
            }
        }
    }

    /// Waits (bounded, polled every 10 ms) until `done` holds.
    func eventually(_ timeout: Double = TestTime.patience, _ done: () async -> Bool) async -> Bool {
        let deadline = TestTime.deadline(timeout)
        while Date() < deadline {
            if await done() { return true }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        return await done()
    }

    /// Lets the session's next reopen happen: waits for its backoff to be asked of the test's
    /// clock (after the fake camera's own capture timeout reported the loss), checks the wait
    /// asked for, and moves the clock past it.
    func reopen(after expected: Double, _ clock: ManualTimekeeper, _ camera: DarkeningCamera,
                sourceLocation: SourceLocation = #_sourceLocation) async {
        let opens = camera.opens
        #expect(await clock.waitForSleepers(), "a reopen waits on the clock", sourceLocation: sourceLocation)
        #expect(clock.requested.last == expected, "the backoff asked: \(clock.requested)", sourceLocation: sourceLocation)
        clock.advance(by: expected)
        #expect(await eventually { camera.opens > opens }, "reopened once the clock passed \(expected) s", sourceLocation: sourceLocation)
    }

    @Test func aCameraThatOpensButStaysDarkIsInterruptedOnceUntilFramesReturn() async throws {
        let camera = DarkeningCamera(), events = EventHub(), clock = ManualTimekeeper()
        let s = try CaptureSession(camera: camera, configuration: SessionConfiguration(preset: "352x288"), events: events,
                                   timekeeper: clock)
        let log = StateLog(events)
        try await s.start()
        #expect(await s.state().state == .running)

        camera.lit = false
        #expect(await eventually { log.states.contains(.interrupted) }, "lost after the capture timeout: \(log.states)")
        let lostAt = log.states.firstIndex(of: .interrupted)!
        // Three reopens that stayed dark, each after a wait twice the last: the backoff's
        // waits are read off the test's clock, not timed on the wall clock.
        for wait in [0.25, 0.5, 1.0] { await reopen(after: wait, clock, camera) }
        #expect(camera.opens == 4, "the start's open and three reopens: \(camera.opens)")
        #expect(await clock.waitForSleepers(), "dark again: the next reopen waits")
        #expect(clock.requested == [0.25, 0.5, 1.0, 2.0], "not reset by a reopen that stayed dark: \(clock.requested)")
        let dark = await s.state()
        #expect(dark.state == .interrupted && !dark.online && dark.error?.contains("no frame") == true, "\(dark)")
        #expect(!log.states[lostAt...].contains(.running), "never `running` without a frame: \(log.states)")

        camera.lit = true
        clock.advance(by: 2.0)
        #expect(await eventually { await s.state().state == .running }, "back once frames come: \(log.states)")
        let back = await s.state()
        #expect(back.online && back.error == nil, "\(back)")
        // The settings read-back (every 0.5 s while running) goes on after the recovery.
        let reads = camera.readBacks
        #expect(await eventually { camera.readBacks > reads }, "read back after the recovery: \(camera.readBacks)")
        #expect(log.states[lostAt...].filter { $0 == .interrupted }.count == 1 && log.states.last == .running,
                "one interruption, then running: \(log.states)")

        // A second loss goes the same way, the backoff from its start again.
        camera.lit = false
        await reopen(after: 0.25, clock, camera)
        #expect(await s.state().state == .interrupted)
        await s.stop()
        #expect(await s.state().state == .idle)
    }

    /// Waits until the camera has been reopened after a loss and is open but still dark (the
    /// session holds its pipeline while it says `interrupted`).
    func reopenedAndDark(_ camera: DarkeningCamera, _ s: CaptureSession, _ clock: ManualTimekeeper) async -> Bool {
        // Reopened, it stays dark without reporting another loss: what follows is the test's alone.
        #expect(await clock.waitForSleepers())
        camera.timeout = 3_600
        await reopen(after: 0.25, clock, camera)
        return await eventually {
            guard camera.opens >= 2, camera.isRunning, !camera.lit else { return false }
            return await s.state().state == .interrupted
        }
    }

    /// A session stopped while its camera is reopened but dark closes the camera and stays
    /// stopped: no reopen after it.
    @Test func stoppingWhileWaitingForFramesClosesTheCamera() async throws {
        let camera = DarkeningCamera(), clock = ManualTimekeeper()
        let s = try CaptureSession(camera: camera, configuration: SessionConfiguration(preset: "352x288"), timekeeper: clock)
        try await s.start()
        camera.lit = false
        #expect(await reopenedAndDark(camera, s, clock), "reopened, dark")
        await s.stop()
        #expect(!camera.isRunning, "closed by stop")
        let opens = camera.opens
        // A reopen only ever follows a wait on the clock: none is pending (the reopened camera
        // reports no loss of its own), and time moved far past any wait brings none.
        #expect(clock.sleeping == 0, "no reopen pending after stop")
        clock.advance(by: 60)
        #expect(await s.state().state == .idle)
        #expect(camera.opens == opens && clock.sleeping == 0, "no reopen after stop")
        camera.lit = true
        try await s.start()
        #expect(await s.state().state == .running)
        await s.stop()
    }

    /// A prepare while the reopened camera is still dark closes the dark stream (it is the
    /// session's pipeline until then) and runs the camera afresh: one run, running.
    @Test func preparingWhileDarkRunsTheCameraAfresh() async throws {
        let a = DarkeningCamera(id: "a"), clock = ManualTimekeeper()
        let s = try CaptureSession(camera: a, configuration: SessionConfiguration(preset: "352x288"), timekeeper: clock)
        try await s.start()
        a.lit = false
        #expect(await reopenedAndDark(a, s, clock), "a reopened, dark")
        let opens = a.opens
        a.lit = true
        let state = try await s.prepare(PrepareRequest(preset: "352x288"))
        #expect(state.state == .running && state.camera?.id == "a", "\(state)")
        #expect(a.opens == opens + 1 && a.isRunning, "closed and opened once more: \(a.opens) opens")
        await s.stop()
        #expect(!a.isRunning)
    }
}
