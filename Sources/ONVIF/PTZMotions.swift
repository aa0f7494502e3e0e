// What the PTZ service keeps between requests, per camera: the continuous move running (its
// generation, what it moves, the task stepping its pan and tilt) and the presets. A Stop or a
// newer move supersedes a move; when either has answered, nothing of the old one moves.

import SystemSupport

/// Moves that run until stopped or timed out (ContinuousMove), and the presets; per source.
final class PTZMotions: Sendable {
    /// A ContinuousMove without Timeout ends after this (Home Assistant sends none, and its
    /// Stop leaves the zoom running: `Zoom=false`).
    static let defaultTimeout = 1.0
    static let maxTimeout = 60.0
    static let maxPresets = 16
    /// Pan or tilt at velocity 1: the whole generic range (-1…1) in two seconds.
    static let panTiltPerSecond = 1.0

    struct Preset: Sendable { var token: String, name: String, position: PTZPosition }

    private struct State {
        /// The running continuous move of each source: its generation (a newer move or a Stop
        /// supersedes it), whether it zooms and pans, and the task stepping its pan.
        var moves: [String: (generation: Int, zooming: Bool, panning: Bool)] = [:]
        var steppers: [String: Task<Void, Never>] = [:]
        var generation = 0
        var presets: [String: [Preset]] = [:]
        var nextPreset = 1
    }
    private let state = Locked(State())

    /// A new continuous move of `source`; the one it replaces has stopped stepping when this
    /// returns.
    func begin(_ source: String, zooming: Bool, panning: Bool) async -> Int {
        let (generation, old) = state.withLock { s in
            s.generation += 1
            s.moves[source] = (s.generation, zooming, panning)
            return (s.generation, s.steppers.removeValue(forKey: source))
        }
        await Self.halt(old)
        return generation
    }

    /// The task stepping the move's pan and tilt (ended when the move is).
    func attach(_ source: String, _ generation: Int, _ task: Task<Void, Never>) {
        let stale = state.withLock { s -> Bool in
            guard s.moves[source]?.generation == generation else { return true }
            s.steppers[source] = task
            return false
        }
        if stale { task.cancel() }
    }

    /// Ends the source's continuous move (the parts asked) and waits for its pan to have
    /// stopped stepping, so nothing moves after a Stop has answered; answers which parts were
    /// running.
    func stop(_ source: String, panTilt: Bool, zoom: Bool) async -> (zooming: Bool, panning: Bool) {
        let (stopped, stepper) = state.withLock { s -> ((zooming: Bool, panning: Bool), Task<Void, Never>?) in
            let stopped = end(&s, source, panTilt: panTilt, zoom: zoom)
            return (stopped, stopped.panning ? s.steppers.removeValue(forKey: source) : nil)
        }
        await Self.halt(stepper)
        return stopped
    }

    static func halt(_ task: Task<Void, Never>?) async {
        task?.cancel()
        await task?.value
    }

    func isCurrent(_ source: String, _ generation: Int) -> Bool { state.withLock { $0.moves[source]?.generation == generation } }

    /// A timed-out move's own end: its stepper is the caller, so nothing to wait for.
    func expire(_ source: String, _ generation: Int) -> (zooming: Bool, panning: Bool) {
        state.withLock { s in
            guard s.moves[source]?.generation == generation else { return (false, false) }
            s.steppers.removeValue(forKey: source)
            return end(&s, source, panTilt: true, zoom: true)
        }
    }

    private func end(_ s: inout State, _ source: String, panTilt: Bool, zoom: Bool) -> (zooming: Bool, panning: Bool) {
        guard let m = s.moves[source] else { return (false, false) }
        let stopsZoom = zoom && m.zooming, stopsPan = panTilt && m.panning
        let left = (zooming: m.zooming && !stopsZoom, panning: m.panning && !stopsPan)
        if !left.zooming && !left.panning { s.moves.removeValue(forKey: source) }
        else { s.moves[source] = (m.generation, left.zooming, left.panning) }
        return (stopsZoom, stopsPan)
    }

    func moving(_ source: String) -> (zooming: Bool, panning: Bool) {
        state.withLock { s in (s.moves[source]?.zooming ?? false, s.moves[source]?.panning ?? false) }
    }

    func presets(_ source: String) -> [Preset] { state.withLock { $0.presets[source] ?? [] } }

    /// Sets (a new token, or replaces `token`'s position); nil when the token is unknown or
    /// the source has all it may keep.
    func setPreset(_ source: String, token: String?, name: String?, position: PTZPosition) -> String? {
        state.withLock { s in
            var list = s.presets[source] ?? []
            if let token {
                guard let i = list.firstIndex(where: { $0.token == token }) else { return nil }
                list[i].position = position
                if let name { list[i].name = name }
                s.presets[source] = list
                return token
            }
            guard list.count < Self.maxPresets else { return nil }
            let token = "preset\(s.nextPreset)"
            s.nextPreset += 1
            list.append(Preset(token: token, name: name ?? token, position: position))
            s.presets[source] = list
            return token
        }
    }

    func removePreset(_ source: String, token: String) -> Bool {
        state.withLock { s in
            guard let i = s.presets[source]?.firstIndex(where: { $0.token == token }) else { return false }
            s.presets[source]!.remove(at: i)
            return true
        }
    }
}
