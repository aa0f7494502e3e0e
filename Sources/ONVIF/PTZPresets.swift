// What the PTZ service keeps between requests, per camera: its presets. A move — continuous
// ones included, with their timeouts — is the device's (the session's per-frame ramps), so
// nothing here steps or times anything.

import SystemSupport

/// The presets of each source.
final class PTZPresets: Sendable {
    static let maxPresets = 16

    struct Preset: Sendable { var token: String, name: String, position: PTZPosition }

    private struct State {
        var presets: [String: [Preset]] = [:]
        var next = 1
    }
    private let state = Locked(State())

    func presets(_ source: String) -> [Preset] { state.withLock { $0.presets[source] ?? [] } }

    /// Sets (a new token, or replaces `token`'s position); nil when the token is unknown or
    /// the source has all it may keep.
    func set(_ source: String, token: String?, name: String?, position: PTZPosition) -> String? {
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
            let token = "preset\(s.next)"
            s.next += 1
            list.append(Preset(token: token, name: name ?? token, position: position))
            s.presets[source] = list
            return token
        }
    }

    func remove(_ source: String, token: String) -> Bool {
        state.withLock { s in
            guard let i = s.presets[source]?.firstIndex(where: { $0.token == token }) else { return false }
            s.presets[source]!.remove(at: i)
            return true
        }
    }
}
