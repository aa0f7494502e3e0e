import CameraCore
import SystemSupport

/// The thread shape every device input's capture runs in (V4L2's and libcamera's): one step
/// waits a bounded while for frames and hands them on; a device that stays silent past
/// `timeout` is lost, as is one whose step throws, and `lost` is told why once the thread has
/// ended and the device is let go (unless its owner stopped it). Time is read from `clock`,
/// so the silence is measured on the injected clock in tests.
enum DeviceCaptureThread {
    /// `step` answers whether a frame (good or rejected) came in this turn; `release` lets the
    /// device go when the thread ends.
    static func start(name: String, device: String, timeout: Double, clock: any Timekeeper,
                      step: @escaping @Sendable () throws(CameraError) -> Bool,
                      release: @escaping @Sendable () -> Void,
                      lost: @escaping @Sendable (CameraError) -> Void) -> SteppingThread {
        let progress = Locked((last: clock.now, failure: CameraError?.none))
        return SteppingThread(name: name, step: {
            do throws(CameraError) {
                let got = try step()
                let now = clock.now
                if got { progress.withLock { $0.last = now } }
                else if now - progress.withLock({ $0.last }) > timeout {
                    throw CameraError.unavailable("\(device): no frame in \(timeout) s")
                }
                return true
            } catch {
                progress.withLock { $0.failure = error }
                return false
            }
        }, end: { stoppedByOwner in
            release()
            if !stoppedByOwner, let failure = progress.withLock({ $0.failure }) { lost(failure) }
        })
    }
}
