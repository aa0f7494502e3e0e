// ONVIF's PTZ presets as the saved state keeps them (issue 57): NVRs set a preset once and
// expect it to stay, as ONVIF's `ForcePersistence` ("should always be assumed to be true")
// says of what they set.
//
//   "ptzPresets": {"<camera id>": [{"token", "name", "pan", "tilt", "zoom"}, …]}

import JSON
import ONVIF

enum SavedPresets {
    /// nil when there are none (nothing to save).
    static func json(_ all: [String: [PTZPresets.Preset]]) -> JSONValue? {
        let kept = all.filter { !$0.value.isEmpty }
        guard !kept.isEmpty else { return nil }
        return .object(kept.mapValues { list in
            .array(list.map { p in
                .object(["token": .string(p.token), "name": .string(p.name), "pan": .number(p.position.pan),
                         "tilt": .number(p.position.tilt), "zoom": .number(p.position.zoom)])
            })
        })
    }

    /// The presets saved, and each entry that could not be read (skipped).
    static func read(_ value: JSONValue?) -> (presets: [String: [PTZPresets.Preset]], dropped: [String]) {
        guard let value else { return ([:], []) }
        guard case .object(let sources) = value else { return ([:], ["ptzPresets: not an object"]) }
        var presets: [String: [PTZPresets.Preset]] = [:], dropped: [String] = []
        for (source, list) in sources {
            guard case .array(let items) = list else {
                dropped.append("ptzPresets.\(source): not a list")
                continue
            }
            for (i, item) in items.enumerated() {
                guard case .string(let token)? = item["token"], case .string(let name)? = item["name"],
                      case .number(let pan)? = item["pan"], case .number(let tilt)? = item["tilt"], case .number(let zoom)? = item["zoom"],
                      (-1...1).contains(pan), (-1...1).contains(tilt), (0...1).contains(zoom), !token.isEmpty else {
                    dropped.append("ptzPresets.\(source)[\(i)]: not a preset (token, name, pan and tilt in -1…1, zoom in 0…1)")
                    continue
                }
                presets[source, default: []].append(PTZPresets.Preset(token: token, name: name, position: PTZPosition(pan: pan, tilt: tilt, zoom: zoom)))
            }
        }
        return (presets, dropped)
    }
}
