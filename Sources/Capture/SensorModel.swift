// The synthetic camera's physics, so every control has a visible, measurable effect:
// the lens position blurs the scene away from its subject distance; exposure duration ×
// ISO × 2^bias sets brightness; white balance tints; the torch brightens. Auto and
// continuous modes converge over a few frames, as a real camera's 3A loops do.

import CameraCore
import Foundation
import SystemSupport

/// What the renderer applies to one frame.
struct Optics: Equatable {
    /// Box-blur radius for luma, in pixels.
    var blurRadius: Int
    /// Luma gain and offset: Y' = Y × gain + add.
    var gain: Double
    var add: Double
    /// Chroma shifts (warmer: V up, U down).
    var du: Double
    var dv: Double
    /// The sensor's gain as ISO (for its noise: SensorNoise).
    var iso: Double = 100
}

final class SensorModel: Sendable {
    /// Exposure product (seconds × ISO) that renders the scene as drawn: 1/60 s at ISO 100.
    static let baseProduct = 100.0 / 60
    static let sceneIlluminant = 5500.0
    /// Mid-grey, the target of automatic exposure.
    static let targetLuma = 118.0

    private let caps: Capabilities
    private let depthAt: @Sendable (Point) -> Double
    private let subjectDepth: Double
    /// The loops' state: advanced by the capture thread, set and read by the session.
    private struct Loops {
        var settings: DeviceSettings
        var lens = 0.5
        var product = SensorModel.baseProduct
        var temperature = SensorModel.sceneIlluminant
        var focusSettled = false, exposureSettled = false, balanceSettled = false
    }
    private let loops: Locked<Loops>

    init(capabilities: Capabilities, subjectDepth: Double, depthAt: @escaping @Sendable (Point) -> Double) {
        caps = capabilities
        self.subjectDepth = subjectDepth
        self.depthAt = depthAt
        loops = Locked(Loops(settings: DeviceSettings(for: capabilities)))
    }

    /// Takes new l.settings; a focus request in auto mode refocuses even if auto already ran.
    func apply(_ s: DeviceSettings, runAutoFocus: Bool = false) {
        loops.withLock { l in
            if runAutoFocus { l.focusSettled = false }
            if s.focus.mode != l.settings.focus.mode || s.focus.point != l.settings.focus.point { l.focusSettled = false }
            if s.exposure.mode != l.settings.exposure.mode || s.exposure.point != l.settings.exposure.point { l.exposureSettled = false }
            if s.whiteBalance.mode != l.settings.whiteBalance.mode { l.balanceSettled = false }
            l.settings = s
            if s.focus.mode == .locked { l.lens = s.focus.lensPosition }
            // A lock without values of its own (locked before any frame) holds what the loop has.
            if s.exposure.mode == .custom || (s.exposure.mode == .locked && s.exposure.held) { l.product = s.exposure.duration * s.exposure.iso }
            if s.whiteBalance.mode == .locked { l.temperature = s.whiteBalance.temperature }
        }
    }

    /// Advances the 3A loops by one frame given the scene's mean luma before exposure, and
    /// returns what to apply to that frame.
    func step(sceneLuma: Double, width: Int) -> Optics {
        loops.withLock { l in
            let s = l.settings
            // Focus: continuous tracks the subject at the point; auto converges once.
            if s.focus.mode == .continuous || (s.focus.mode == .auto && !l.focusSettled) {
                let target = depthAt(s.focus.point)
                l.lens += (target - l.lens) * 0.4
                if abs(target - l.lens) < 0.005 { l.lens = target; l.focusSettled = true }
            }
            // Exposure: bring the scene to mid-grey (bias applies on top, as EV).
            if s.exposure.mode == .continuous || (s.exposure.mode == .auto && !l.exposureSettled) {
                let wanted = Self.baseProduct * Self.targetLuma / max(sceneLuma, 1)
                l.product *= pow(wanted / l.product, 0.4)
                if abs(wanted / l.product - 1) < 0.01 { l.product = wanted; l.exposureSettled = true }
            }
            if s.whiteBalance.mode == .continuous || (s.whiteBalance.mode == .auto && !l.balanceSettled) {
                l.temperature += (Self.sceneIlluminant - l.temperature) * 0.4
                if abs(l.temperature - Self.sceneIlluminant) < 5 { l.temperature = Self.sceneIlluminant; l.balanceSettled = true }
            }
            let bias = pow(2, s.exposure.bias)
            let gain = l.product / Self.baseProduct * bias
            var torch = 0.0
            if caps.torch {
                let dark = l.product >= (caps.exposureDuration?.max ?? 0.5) * (caps.iso?.max ?? 3200) * 0.99
                if s.torch.mode == .on || (s.torch.mode == .auto && dark) { torch = 70 * max(s.torch.level, 0.05) }
            }
            let tint = (l.temperature - Self.sceneIlluminant) / 1000
            let blur = Int((Double(width) * 0.03 * abs(l.lens - subjectDepth)).rounded())
            let iso = s.exposure.mode == .custom || (s.exposure.mode == .locked && s.exposure.held) ? s.exposure.iso : split(l.product).1
            return Optics(blurRadius: blur, gain: gain, add: torch, du: -6 * tint, dv: 6 * tint, iso: iso)
        }
    }

    /// The applied l.settings with the values the loops have reached.
    func report(_ s: DeviceSettings) -> DeviceSettings {
        loops.withLock { l in
            var r = s
            r.focus.lensPosition = (l.lens * 1000).rounded() / 1000
            // Custom reports what was asked, a lock what it holds (as given: a camera's lock
            // keeps its time and gain, each as it was); the automatic modes what they reached.
            if s.exposure.mode == .auto || s.exposure.mode == .continuous || (s.exposure.mode == .locked && !s.exposure.held) {
                let (duration, iso) = split(l.product)
                r.exposure.duration = duration
                r.exposure.iso = iso
            }
            r.whiteBalance.temperature = l.temperature.rounded()
            return r
        }
    }

    /// Spreads an exposure product over duration and ISO: ISO 100 until the duration reaches
    /// 1/30 s (motion blur), then ISO rises, as auto-exposure programs do.
    private func split(_ p: Double) -> (Double, Double) {
        let dRange = caps.exposureDuration ?? Range(min: 0.0001, max: 0.5)
        let iRange = caps.iso ?? Range(min: 50, max: 3200)
        var duration = p / 100
        var iso = 100.0
        if duration > 1.0 / 30 { duration = 1.0 / 30; iso = p / duration }
        if duration < dRange.min { duration = dRange.min; iso = p / duration }
        return ((dRange.clamp(duration) * 1e6).rounded() / 1e6, iRange.clamp(iso).rounded())
    }
}
