// Device loss: the running camera was unplugged, failed, or stopped delivering. Viewers get
// the placeholder, the state says `interrupted`, and the camera is reopened with backoff
// and the same format and settings (written again in full: a replugged camera powered up at
// its defaults) until it is back or the session moves on.

import CameraCore
import Movie

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
    func interrupted(_ error: CameraError, generation launched: Int) {
        guard launched == generation, runState == .running else { return }
        logger.warning("camera \(camera.descriptor.id) lost: \(error.description)")
        endRecording(.cameraLost)  // what was recorded is kept
        halt()
        lost(error)
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

    private func scheduleReconnect(attempt: Int) {
        let delay = recovery.next()
        Task { [weak self] in
            try? await Task.sleep(nanoseconds: UInt64(delay * 1e9))
            await self?.reconnect(attempt: attempt)
        }
    }

    private func reconnect(attempt: Int) {
        guard attempt == generation, runState == .interrupted else { return }  // stopped or switched meanwhile
        do throws(CameraError) {
            pipeline = try launch(camera, format)
            runState = .running
            lastError = nil
            logger.info("camera \(camera.descriptor.id) is back")
            announce()
        } catch {
            lastError = error.description
            scheduleReconnect(attempt: generation)
        }
    }
}
