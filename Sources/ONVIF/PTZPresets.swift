// What the PTZ service keeps between requests, per camera: its presets. A move — continuous
// ones included, with their timeouts — is the device's (the session's per-frame ramps), so
// nothing here steps or times anything. The application keeps them across restarts (issue
// 57): it hands the saved ones in and hears of every change.

import SystemSupport

/// The presets of each source.
public final class PTZPresets: Sendable {
    public static let maxPresets = 16

    public struct Preset: Sendable, Equatable {
        public var token: String, name: String, position: PTZPosition
        public init(token: String, name: String, position: PTZPosition) {
            self.token = token; self.name = name; self.position = position
        }
    }

    private struct State {
        var presets: [String: [Preset]] = [:]
        var next = 1
    }
    private let state: Locked<State>
    private let changed: @Sendable () -> Void

    /// `saved`: each source's presets as they were (at most `maxPresets` each are kept);
    /// `changed`: called after each set or removal, off any lock here.
    public init(saved: [String: [Preset]] = [:], changed: @escaping @Sendable () -> Void = {}) {
        let kept = saved.mapValues { Array($0.prefix(Self.maxPresets)) }
        // New tokens follow the highest `presetN` kept, so none is handed out twice.
        let highest = kept.values.joined().compactMap { p in p.token.hasPrefix("preset") ? Int(p.token.dropFirst(6)) : nil }.max() ?? 0
        state = Locked(State(presets: kept, next: highest + 1))
        self.changed = changed
    }

    public func presets(_ source: String) -> [Preset] { state.withLock { $0.presets[source] ?? [] } }

    /// Every source's presets.
    public var all: [String: [Preset]] { state.withLock { $0.presets } }

    /// Sets (a new token, or replaces `token`'s position); nil when the token is unknown or
    /// the source has all it may keep.
    func set(_ source: String, token: String?, name: String?, position: PTZPosition) -> String? {
        let done = state.withLock { s -> String? in
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
        if done != nil { changed() }
        return done
    }

    func remove(_ source: String, token: String) -> Bool {
        let done = state.withLock { s -> Bool in
            guard let i = s.presets[source]?.firstIndex(where: { $0.token == token }) else { return false }
            s.presets[source]!.remove(at: i)
            return true
        }
        if done { changed() }
        return done
    }
}
