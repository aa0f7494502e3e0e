// AVCaptureMultiCamSession for Linux: one CaptureSession per camera, side by side, each with
// its own format, settings, viewers and photos; and the *main* session — the one
// `/api/session`, `/stream` and `/snapshot` address, for clients that know one camera — as a
// pointer to one of them.
//
// A device is opened by one session only. So the main session shares: switching it to a
// camera that already runs takes that camera's session as it is (no second open, no
// `camera_busy`), and the camera it leaves stops only if nothing else started it — a camera
// started in its own right (`/api/cameras/{id}/session/start`, `cameras[].autostart`) keeps
// running for its own viewers.

import CameraCore
import SystemSupport

public final class MultiCamSession: Sendable {
    /// One session per camera, in the cameras' order (`?action=stream_N` counts in it).
    public let sessions: [CaptureSession]
    /// Every session's events, each naming its camera.
    public let events: EventHub
    private struct Pointer {
        var main: Int
        /// Sessions started in their own right: leaving them as main does not stop them.
        var pinned: Set<Int> = []
    }
    private let pointer: Locked<Pointer>
    /// What the main session's clients watch (`/stream`, RTSP `/main`, WHEP `/api/whep`,
    /// `/live.mp4`): moved with it.
    public let mainFeed: SessionFeed
    /// Main-session switches take turns (each awaits a start and a stop).
    private let switching = TurnTaker()
    private let midSwitch = Locked(false)
    /// A switch of the main session is under way: its target may run and the camera it leaves
    /// not have stopped yet. What reads the cameras whole (the saved state) waits for the
    /// state event that ends it.
    public var isSwitching: Bool { midSwitch.withLock { $0 } }

    public init(sessions: [CaptureSession], main: Int, events: EventHub) {
        precondition(sessions.indices.contains(main), "the main session is one of the sessions")
        self.sessions = sessions
        self.events = events
        pointer = Locked(Pointer(main: main))
        mainFeed = SessionFeed(sessions[main], follows: true)
    }

    public var main: CaptureSession { sessions[pointer.withLock { $0.main }] }
    public var mainID: String { main.id }
    public var ids: [String] { sessions.map(\.id) }

    public func session(_ id: String) throws(SessionError) -> CaptureSession {
        guard let s = sessions.first(where: { $0.id == id }) else { throw .unknownCamera(id, known: ids) }
        return s
    }

    /// The session's state, saying whether it is the main one.
    public func state(of session: CaptureSession) async -> SessionState {
        var s = await session.state()
        s.main = session === main
        return s
    }

    /// A session event as clients see it: a state says whether its camera is the main one.
    public func marked(_ event: SessionEvent) -> SessionEvent {
        guard case .state(let s) = event else { return event }
        return .state(marked(s))
    }

    /// A state saying whether its camera is the main one now.
    public func marked(_ state: SessionState) -> SessionState {
        var s = state
        s.main = s.camera?.id == mainID
        return s
    }

    // MARK: - A camera in its own right

    /// Starts a camera's own session (and keeps it running when the main view moves away).
    /// Meant to run in its own right from the call on, even if this start fails (a camera that
    /// is not there yet): what the saved state keeps.
    @discardableResult
    public func start(_ session: CaptureSession) async throws(SessionError) -> SessionState {
        let index = indexOf(session)
        pointer.withLock { _ = $0.pinned.insert(index) }  // before its state event
        var s = try await session.start()
        s.main = session === main
        return s
    }

    /// A camera's own prepare (its own path, ONVIF's encoder configuration): a camera it
    /// starts runs in its own right, as its own start would make it.
    @discardableResult
    public func prepare(_ session: CaptureSession, _ request: PrepareRequest) async throws(SessionError) -> SessionState {
        let index = indexOf(session)
        let starts = await !session.isRunning
        if starts { pointer.withLock { _ = $0.pinned.insert(index) } }
        do {
            var s = try await session.prepare(request)
            s.main = session === main
            return s
        } catch {
            if starts { pointer.withLock { _ = $0.pinned.remove(index) } }
            throw error
        }
    }

    /// The cameras meant to run in their own right (started by their own session's call or
    /// `cameras[].autostart`), by id.
    public var inTheirOwnRight: Set<String> { Set(pointer.withLock { $0.pinned }.map { sessions[$0].id }) }

    /// Stops a camera's session, whichever view started it.
    @discardableResult
    public func stop(_ session: CaptureSession) async -> SessionState {
        let index = indexOf(session)
        pointer.withLock { _ = $0.pinned.remove(index) }
        var s = await session.stop()
        s.main = session === main
        return s
    }

    // MARK: - The main session

    /// Moves the main session to camera `id` (nil: rear ↔ front, else the next camera). The
    /// target starts first (or is shared as it runs); if it fails the main session stays
    /// where it was. The camera left behind stops unless it was started in its own right.
    public func switchMain(to id: String?) async throws(SessionError) -> SessionState {
        let result: Result<SessionState, SessionError> = await switching.take { [self] () async -> Result<SessionState, SessionError> in
            midSwitch.withLock { $0 = true }
            defer { midSwitch.withLock { $0 = false } }
            let from = pointer.withLock { $0.main }
            let to: Int
            if let id {
                guard let i = sessions.firstIndex(where: { $0.id == id }) else { return .failure(.unknownCamera(id, known: ids)) }
                to = i
            } else {
                to = nextCamera(after: from)
            }
            let target = sessions[to]
            do throws(SessionError) {
                if await !target.isRunning { try await target.start() }
            } catch {
                if case .camera(let cause) = error { return .failure(.switchFailed(id: target.id, cause: cause)) }
                return .failure(error)
            }
            let leave = pointer.withLock { p -> Bool in
                p.main = to
                return from != to && !p.pinned.contains(from)
            }
            mainFeed.move(to: target)
            if leave {
                await sessions[from].stop()
            } else if from != to {
                // It runs on for its own viewers: say it is no longer the main session.
                events.publish(.state(await sessions[from].state()))
            }
            var s = await target.state()
            s.main = true
            midSwitch.withLock { $0 = false }  // whole again: this event is what the switch leaves
            events.publish(.state(s))
            return .success(s)
        }
        if case .failure = result {
            // Whole again, nothing moved: said once more for what skipped the switch's events.
            events.publish(.state(await state(of: main)))
        }
        return try result.get()
    }

    /// Without a camera named: the rear camera's counterpart at the front and back, else
    /// the next camera in the list (AVCam's "switch camera" button).
    private func nextCamera(after index: Int) -> Int {
        let position = sessions[index].camera.descriptor.position
        let opposite: CameraDescriptor.Position? = switch position {
        case .rear: .front
        case .front: .rear
        default: nil
        }
        if let opposite, let i = sessions.firstIndex(where: { $0.camera.descriptor.position == opposite }) { return i }
        return (index + 1) % sessions.count
    }

    private func indexOf(_ session: CaptureSession) -> Int {
        sessions.firstIndex { $0 === session } ?? 0
    }
}

extension CaptureSession {
    /// The id of the session's camera.
    public nonisolated var id: String { camera.descriptor.id }
}

/// Runs async operations one after another, in the order they asked.
final class TurnTaker: Sendable {
    private struct Queue {
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let queue = Locked(Queue())

    func take<T: Sendable>(_ work: @Sendable () async -> T) async -> T {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = queue.withLock { q -> Bool in
                if q.busy { q.waiting.append(c); return false }
                q.busy = true
                return true
            }
            if now { c.resume() }
        }
        let result = await work()
        let next = queue.withLock { q -> CheckedContinuation<Void, Never>? in
            if q.waiting.isEmpty { q.busy = false; return nil }
            return q.waiting.removeFirst()
        }
        next?.resume()
        return result
    }
}
