// Device loss: the running camera was unplugged, failed, or stopped delivering. Viewers get
// the placeholder, the state says `interrupted`, and the camera is reopened with backoff
// and the same format and settings (written again in full: a replugged camera powered up at
// its defaults) until it is back or the session moves on.

import CameraCore
import Movie
import SystemSupport

/// The session's run: its state, the error that ended or holds it, the pipeline of the
/// camera that runs (or was reopened and awaits its first frame), and the reopening's backoff.
struct SessionRun {
    var state: SessionState.Run = .idle
    var error: String?
    var pipeline: FramePipeline?
    /// Bumped by every start, stop and switch: loops of an older one (reconnect, read-back,
    /// zoom ramp) give up.
    var number = 0
    var recovery = Backoff()
    /// The camera ran since the session was made: the settings hold values read back from it
    /// (an automatic exposure's time and ISO), not placeholders.
    var ran = false
}

/// Reopen delays: a quarter second, doubling to five.
struct Backoff: Sendable, Equatable {
    static let first = 0.25, limit = 5.0
    private(set) var delay = first

    /// The delay to wait now; the next one doubles.
    mutating func next() -> Double {
        defer { delay = min(delay * 2, Self.limit) }
        return delay
    }

    mutating func reset() { delay = Self.first }
}

extension CaptureSession {
    /// Reopened after a loss and streaming, but no frame yet: still `interrupted`.
    var awaitingFirstFrame: Bool { run.state == .interrupted && run.pipeline != nil }

    /// The camera reports a loss: unplugged, an I/O error, or no frame within the capture
    /// timeout.
    func interrupted(_ error: CameraError, generation launched: Int) {
        guard launched == run.number else { return }
        switch run.state {
        case .running:
            logger.warning("camera \(camera.descriptor.id) lost: \(error.description)")
            endRecording(.cameraLost)  // what was recorded is kept
            halt()
            lost(error)
        case .interrupted where awaitingFirstFrame:
            // Reopened, but no frame came: the same loss goes on. The state stays `interrupted`
            // (it never said `running` for a camera that delivered nothing), and the next
            // attempt waits longer: a camera that opens but stays dark (every buffer dropped,
            // a stalled USB link) is tried after its timeout and a wait doubling to 5 s, not
            // reopened at once after every timeout.
            halt()
            if run.error != error.description {
                run.error = error.description
                announce()
            }
            scheduleReconnect(attempt: run.number)
        default:
            return
        }
    }

    /// The camera stopped and cannot run now: `interrupted`, the placeholder, and reopening
    /// with backoff at the same format and settings.
    func lost(_ error: CameraError) {
        run.state = .interrupted
        run.error = error.description
        publishPlaceholder("NO SIGNAL")
        announce()
        run.recovery.reset()
        scheduleReconnect(attempt: run.number)
    }

    /// The first frame of the run.pipeline launched as `launched`: a camera reopened after a loss
    /// is back (`running`) only now, not when its stream-on succeeded.
    func delivering(generation launched: Int) {
        guard launched == run.number, awaitingFirstFrame else { return }
        run.state = .running
        run.error = nil
        run.recovery.reset()
        logger.info("camera \(camera.descriptor.id) is back")
        announce()
    }

    private func scheduleReconnect(attempt: Int) {
        let delay = run.recovery.next()
        let timekeeper = self.timekeeper
        Task { [weak self] in
            try? await timekeeper.sleep(delay)
            await self?.reconnect(attempt: attempt)
        }
    }

    /// Reopens the camera at the same format and settings. It stays `interrupted` until the
    /// first frame (`delivering`) or the next loss (`interrupted`, another attempt later).
    private func reconnect(attempt: Int) {
        guard attempt == run.number, run.state == .interrupted, run.pipeline == nil else { return }  // stopped or switched meanwhile
        do throws(CameraError) {
            run.pipeline = try launch(camera, format)
            logger.info("camera \(camera.descriptor.id) reopened; waiting for its first frame")
        } catch {
            run.error = error.description
            scheduleReconnect(attempt: run.number)
        }
    }
}
