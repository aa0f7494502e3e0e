// A continuous move (ONVIF's ContinuousMove): the crop's centre on a per-frame `PanRamp`, the
// zoom on its `ZoomRamp`, both ended by the move's timeout on the session's clock or a stop.
// It is announced when it starts and when it ends; a state read during it says where it is.

import CameraCore

extension CaptureSession {
    /// Starts a continuous move, replacing the one under way: the centre at `velocity` and the
    /// zoom toward its end at `zoomRate` doublings a second (negative: out), for `duration`
    /// seconds unless stopped first. A part at 0 holds where it has got to.
    @discardableResult
    public func move(_ m: MoveRequest) throws(SessionError) -> SessionState {
        try SettingsValidation.move(m)
        let caps = camera.capabilities.zoom
        if m.zoomRate != 0 { try setZoom(ZoomRequest(factor: m.zoomRate > 0 ? caps.max : caps.min, rate: abs(m.zoomRate))) }
        else { try holdZoom() }
        let panning = m.velocity != .zero
        if panning { pipelineSettings.startPan(velocity: m.velocity, at: timekeeper.now, for: m.duration) } else { holdCenter() }
        moving.begin(panning: panning, zooming: m.zoomRate != 0) { token in
            Task { [weak self, timekeeper] in
                do { try await timekeeper.sleep(m.duration) } catch { return }
                await self?.endMove(token)
            }
        }
        return announce()
    }

    /// Stops the parts named of what moves (the continuous move, a zoom ramp) where each has
    /// got to; announced when something stopped.
    @discardableResult
    public func stopMove(pan: Bool, zoom: Bool) throws(SessionError) -> SessionState {
        let now = timekeeper.now
        let stopsPan = pan && pipelineSettings.pan.isMoving(at: now)
        let stopsZoom = zoom && zoomRamping(at: now)
        if stopsPan { holdCenter() }
        if stopsZoom { try holdZoom() }
        return stopsPan || stopsZoom ? announce() : state()
    }

    /// The move's timeout: what it started and still moves stops there.
    private func endMove(_ token: Int) {
        guard moving.token == token else { return }
        if moving.panning { holdCenter() }
        if moving.zooming {
            moving.zooming = false
            do { try holdZoom() } catch { logger.warning("continuous zoom's end: \(error)") }
        }
        moving.endIfIdle()
        announce()
    }

    /// The centre stays where the pan has got to.
    private func holdCenter() {
        if let c = pipelineSettings.holdPan(at: timekeeper.now) { settings.zoom.center = c }
        moving.panning = false
        moving.endIfIdle()
    }

    /// A zoom ramp stops where it has got to.
    private func holdZoom() throws(SessionError) {
        let now = timekeeper.now
        guard zoomRamping(at: now) else { return }
        try setZoom(ZoomRequest(factor: pipelineSettings.ramp.factor(at: now)))
    }
}
