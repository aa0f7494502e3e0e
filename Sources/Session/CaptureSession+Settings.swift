// The device-setting calls. Each validates against the camera's capabilities (pure, in
// SettingsValidation), asks the camera for the change and keeps what it answered; a
// refusal leaves the session's settings as they were. Zoom is routed once: the lens up to
// its range, the crop only beyond it.

import CameraCore
import Foundation
import SystemSupport

/// A zoom ramp's lens steps: whether they are still being written (the ramp's time may be
/// over before the last step reached the device: the state says `ramping` until then), and
/// which stepping task is the current one (a newer zoom call supersedes it).
struct LensSteps {
    var ramping = false
    var token = 0
}

extension CaptureSession {
    @discardableResult
    public func zoom(_ r: ZoomRequest) throws(SessionError) -> SessionState {
        try setZoom(r)
        return announce()
    }

    /// A zoom call's change, unannounced (a continuous move announces its parts once). It
    /// supersedes a continuous move's zoom, and with a centre its pan.
    func setZoom(_ r: ZoomRequest) throws(SessionError) {
        let caps = camera.capabilities.zoom
        let (target, rate) = try SettingsValidation.zoom(r, caps)
        let now = timekeeper.now
        if rate == nil || !caps.optical {
            // At once: the lens goes there now (the crop follows from the factor).
            var new = settings
            new.zoom.optical = SettingsValidation.zoomParts(target, caps).optical
            try commit(new)
            lens.token += 1
            lens.ramping = false
            let from = pipelineSettings.ramp.factor(at: now)
            pipelineSettings.ramp = rate == nil ? .fixed(target) : ZoomRamp(from: from, to: target, rate: rate, start: now)
            if rate != nil { let ramp = pipelineSettings.ramp; Task { await announceEnd(of: ramp) } }
        } else {
            // A ramp: the crop follows the curve per frame; the lens is stepped along it.
            let from = pipelineSettings.ramp.factor(at: now)
            pipelineSettings.ramp = ZoomRamp(from: from, to: target, rate: rate, start: now)
            let ramp = run.number
            lens.token += 1
            lens.ramping = true
            let token = lens.token
            Task { await stepLens(generation: ramp, ramp: pipelineSettings.ramp, token: token) }
        }
        settings.zoom.factor = target
        moving.zooming = false
        if let c = r.center { place(c) }
        moving.endIfIdle()
    }

    /// A ramp of the crop alone has no lens stepper to say where it ended: the state (and what
    /// follows it: SSE, MQTT, the saved state) hears of its end from here.
    private func announceEnd(of ramp: ZoomRamp) async {
        let wait = ramp.end - timekeeper.now
        if wait > 0 { try? await timekeeper.sleep(wait + 0.001) }
        if pipelineSettings.ramp == ramp { announce() }
    }

    /// Moves the crop's centre (digital pan and tilt), the zoom as it is: the next frame of
    /// every output is cropped about it, as far as the frame allows at that zoom. It ends a
    /// continuous pan.
    @discardableResult
    public func center(_ c: Point) throws(SessionError) -> SessionState {
        try SettingsValidation.center(c)
        place(c)
        return announce()
    }

    /// The crop's centre set: a continuous pan under way is over.
    private func place(_ c: Point) {
        settings.zoom.center = c
        pipelineSettings.pan = .fixed(c)
        moving.panning = false
        moving.endIfIdle()
    }

    /// A ramp's curve runs, or its lens stepper has not written its last step yet.
    func zoomRamping(at t: Double) -> Bool { pipelineSettings.ramp.isRamping(at: t) || lens.ramping }

    /// Moves the lens along a zoom ramp, a control step at a time, until it ends or another
    /// zoom call, stop or switch supersedes it.
    private func stepLens(generation launched: Int, ramp: ZoomRamp, token: Int) async {
        let caps = camera.capabilities.zoom
        defer {
            if token == lens.token {
                lens.ramping = false
                if launched == run.number { announce() }  // the lens is where the ramp ends
            }
        }
        while launched == run.number, pipelineSettings.ramp == ramp {
            let now = timekeeper.now
            let optical = SettingsValidation.zoomParts(ramp.factor(at: now), caps).optical
            let ending = !ramp.isRamping(at: now)
            // A step a hundredth or more; the last one exactly where the ramp ends, however
            // close the step before it came (a step landing 0.005 short of the lens's end left
            // the lens at 4.99 of 5 and the state saying so: make test-asan caught it).
            if abs(optical - settings.zoom.optical) >= 0.01 || (ending && optical != settings.zoom.optical) {
                var new = settings
                new.zoom.optical = optical
                do { try commit(new) } catch {
                    logger.warning("zoom ramp stopped: \(error)")
                    pipelineSettings.ramp = .fixed(settings.zoom.optical)
                    return
                }
            }
            if ending { return }
            try? await timekeeper.sleep(0.033)  // about a frame
        }
    }

    @discardableResult
    public func focus(_ r: FocusRequest) throws(SessionError) -> SessionState {
        let (new, runAutoFocus) = try SettingsValidation.focus(r, camera.capabilities, settings)
        try commit(new, runAutoFocus: runAutoFocus)
        return announce()
    }

    @discardableResult
    public func exposure(_ r: ExposureRequest) throws(SessionError) -> SessionState {
        var next = try SettingsValidation.exposure(r, camera.capabilities, settings)
        if next.exposure.mode == .locked && settings.exposure.mode != .locked && r.duration == nil && r.iso == nil {
            // Locked from another mode, it holds what the camera has: custom's values, or an
            // automatic mode's as read back — running, or stopped, the last it read back (what
            // the state shows, written at its next start). A camera that never ran has none.
            next.exposure.held = settings.exposure.mode == .custom || run.state == .running || run.ran
        }
        try commit(next)
        return announce()
    }

    @discardableResult
    public func whiteBalance(_ r: WhiteBalanceRequest) throws(SessionError) -> SessionState {
        try commit(try SettingsValidation.whiteBalance(r, camera.capabilities, settings))
        return announce()
    }

    @discardableResult
    public func torch(_ r: TorchRequest) throws(SessionError) -> SessionState {
        try commit(try SettingsValidation.torch(r, camera.capabilities, settings))
        return announce()
    }

    /// Orientation belongs to the output: no device control is written.
    @discardableResult
    public func orientation(_ r: OrientationRequest) throws(SessionError) -> SessionState {
        settings.orientation = try SettingsValidation.orientation(r, settings.orientation)
        pipelineSettings.setOrientation(rotation: settings.orientation.rotation, mirrored: settings.orientation.mirrored)
        return announce()
    }

    /// Asks the camera for `new` and keeps what it answered; on a refusal nothing changes.
    func commit(_ new: DeviceSettings, runAutoFocus: Bool = false) throws(SessionError) {
        do throws(CameraError) {
            let accepted = try camera.apply(SettingsChange(old: settings, new: new, runAutoFocus: runAutoFocus))
            settings = accepted.keepingSessionParts(of: new)
        } catch {
            throw .camera(error)
        }
    }

    // MARK: - Device controls (power users)

    public func controls() throws(SessionError) -> [DeviceControl] {
        do throws(CameraError) { return try camera.controls() } catch { throw SessionError(controlError: error) }
    }

    /// Sets the camera's own controls by key; answers the controls after the change. The
    /// session's settings are read back, so a zoom or focus set this way shows in the state;
    /// the others are kept in the settings' `controls`, written again at every start, replug
    /// and format change (the state shows them, and they are saved with the rest).
    public func setControls(_ values: [String: Int]) throws(SessionError) -> [DeviceControl] {
        do throws(CameraError) {
            // Kept at once: the device has them, whatever the reads below answer.
            let kept = try camera.setControls(values)
            settings.controls.merge(kept) { _, set in set }
            adoptReadBack()
            announce()
            return try camera.controls()
        } catch { throw SessionError(controlError: error) }
    }

    // MARK: - Read-back

    /// While running, the device's values are read back at a modest rate, off the frame
    /// path: automatic modes move exposure, gain, temperature and the lens, and another
    /// program may change a control. A change that is not an automatic mode's own doing is
    /// announced as a state event.
    func startReadBack(generation launched: Int) {
        let interval = configuration.readBackInterval
        guard interval > 0 else { return }
        Task { [weak self] in
            while let self, await self.readBackTick(generation: launched) {
                try? await Alarm.sleep(interval)
            }
        }
    }

    private func readBackTick(generation launched: Int) -> Bool {
        guard launched == run.number else { return false }
        switch run.state {
        case .running:
            if adoptReadBack() { announce() }
            return true
        case .interrupted where awaitingFirstFrame:
            return true  // reopened after a loss, waiting for its first frame: read back once it runs
        default:
            return false
        }
    }

    /// Takes the device's values; true when something beyond automatic drift changed.
    @discardableResult
    func adoptReadBack() -> Bool {
        guard let read = camera.readBack(settings) else { return false }
        let before = settings
        var next = read.keepingSessionParts(of: settings)
        // A ramp is on while its curve runs and until the lens stepper wrote its last step: a
        // stepper that runs late (a loaded machine; make test-asan caught it) has the lens
        // short of the end after the curve's time is up, which is not the lens moved from
        // outside.
        let ramping = zoomRamping(at: timekeeper.now)
        if !ramping, abs(next.zoom.optical - before.zoom.optical) >= 0.005 {
            // The lens moved from outside: the picture is the lens's alone now, unless it
            // sits at the end of its range with the crop beyond it.
            let opticalMax = camera.capabilities.zoom.opticalMax
            let factor = next.zoom.optical >= opticalMax - 0.005 ? max(before.zoom.factor, next.zoom.optical) : next.zoom.optical
            pipelineSettings.ramp = .fixed(factor)
            next.zoom.factor = factor
        } else if ramping {
            next.zoom.optical = before.zoom.optical
        }
        settings = next
        return before.differsBeyondAutomaticDrift(from: next)
    }
}
