// Every topic this host uses, in one place: `<prefix>/<node>/status`, per camera
// `<prefix>/<node>/<camera>/{state,event,snapshot,code}`, its commands under the same level
// (`…/<camera>/session/zoom` is `POST /api/cameras/<camera>/session/zoom`), and the fleet's.

struct MQTTTopics: Sendable {
    let prefix: String
    let node: String

    var base: String { "\(prefix)/\(node)" }
    /// `online` (retained) while connected; the broker publishes the will, `offline`, when we vanish.
    var status: String { "\(base)/status" }
    func camera(_ level: String) -> String { "\(base)/\(level)" }
    func state(_ level: String) -> String { "\(camera(level))/state" }
    func event(_ level: String) -> String { "\(camera(level))/event" }
    func snapshot(_ level: String) -> String { "\(camera(level))/snapshot" }
    func code(_ level: String) -> String { "\(camera(level))/code" }
    /// The microphone's level, once a second: `{"peakDb", "rmsDb", "muted"}`.
    func soundLevel(_ level: String) -> String { "\(camera(level))/level" }
    func command(_ level: String, _ route: String) -> String { "\(camera(level))/\(route)" }
    /// Every command of every camera of this host.
    var commands: String { "\(base)/+/#" }
    /// What this host publishes under a camera, never a command.
    static let published: Set<String> = ["state", "event", "snapshot", "code", "level"]

    var fleetCapture: String { "\(prefix)/fleet/capture" }
    func fleetReplies(_ set: String) -> String { "\(prefix)/fleet/sets/\(set)" }

    /// A camera id as a topic level and an HA id: letters, digits, `_` and `-` (others → `_`).
    static func level(_ camera: String) -> String {
        String(camera.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "_" })
    }
}
