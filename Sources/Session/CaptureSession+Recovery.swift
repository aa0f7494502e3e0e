// Device loss: the running camera was unplugged, failed, or stopped delivering. Viewers get
// the placeholder, the state says `interrupted`, and the camera is reopened with backoff
// and the same format and settings (written again in full: a replugged camera powered up at
// its defaults) until it is back or the session moves on.

import CameraCore
import Movie
import SystemSupport

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
    var awaitingFirstFrame: Bool { runState == .interrupted && pipeline != nil }

    /// The camera reports a loss: unplugged, an I/O error, or no frame within the capture
    /// timeout.
    func interrupted(_ error: CameraError, generation launched: Int) {
        guard launched == generation else { return }
        switch runState {
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
            if lastError != error.description {
                lastError = error.description
                announce()
            }
            scheduleReconnect(attempt: generation)
        default:
            return
        }
    }

    /// The camera stopped and cannot run now: `interrupted`, the placeholder, and reopening
    /// with backoff at the same format and settings.
    func lost(_ error: CameraError) {
        runState = .interrupted
        lastError = error.description
        publishPlaceholder("NO SIGNAL")
        announce()
        recovery.reset()
        scheduleReconnect(attempt: generation)
    }

    /// The first frame of the pipeline launched as `launched`: a camera reopened after a loss
    /// is back (`running`) only now, not when its stream-on succeeded.
    func delivering(generation launched: Int) {
        guard launched == generation, awaitingFirstFrame else { return }
        runState = .running
        lastError = nil
        recovery.reset()
        logger.info("camera \(camera.descriptor.id) is back")
        announce()
    }

    private func scheduleReconnect(attempt: Int) {
        let delay = recovery.next()
        Task { [weak self] in
            try? await Alarm.sleep(delay)
            await self?.reconnect(attempt: attempt)
        }
    }

    /// Reopens the camera at the same format and settings. It stays `interrupted` until the
    /// first frame (`delivering`) or the next loss (`interrupted`, another attempt later).
    private func reconnect(attempt: Int) {
        guard attempt == generation, runState == .interrupted, pipeline == nil else { return }  // stopped or switched meanwhile
        do throws(CameraError) {
            pipeline = try launch(camera, format)
            logger.info("camera \(camera.descriptor.id) reopened; waiting for its first frame")
        } catch {
            lastError = error.description
            scheduleReconnect(attempt: generation)
        }
    }
}
