// Session events on the wire (SSE and MQTT): each event's name and its JSON.

import Foundation
import Session

/// Session events on the wire: the SSE event name and its JSON.
extension SessionEvent {
    var name: String {
        switch self {
        case .state: "state"
        case .photo: "photo"
        case .recording: "recording"
        case .metadata: "metadata"
        case .motion: "motion"
        case .deleted: "deleted"
        case .level: "level"
        }
    }

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let data: Data? = switch self {
        case .state(let s): try? encoder.encode(s)
        case .photo(let p): try? encoder.encode(PhotoJSON(p))
        case .recording(let r): try? encoder.encode(r)
        case .metadata(let m): try? encoder.encode(m)
        case .motion(let m): try? encoder.encode(m)
        case .deleted(let d): try? encoder.encode(d)
        case .level(let l): try? encoder.encode(l)
        }
        return data.map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
