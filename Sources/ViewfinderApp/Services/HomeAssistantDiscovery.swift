// Home Assistant MQTT discovery: one device per camera of this host, its entities from what
// the camera can do (no torch → no torch switch), each a retained config on
// `<discoveryPrefix>/<component>/viewfinder_<node>/<camera>_<entity>/config`. Commands are the
// HTTP routes' topics (MQTTCommands), state the camera's retained state JSON, availability
// this host's status topic. Checked against HA 2024.3's schemas (docs/notes/issue-29-research.md)
// and against a running Home Assistant (Tests/homeassistant).

import CameraCore
import JSON

struct HomeAssistantDiscovery {
    struct Camera {
        /// The camera's id, and the same kept to an HA id's letters (`MQTTTopics.level`).
        var id: String
        var level: String
        var name: String
        var kind: String
        var capabilities: Capabilities
        /// It has a microphone: a mute switch and a sound level sensor.
        var hasMicrophone = false
    }

    struct Config: Equatable {
        var topic: String
        var payload: JSONValue
    }

    let topics: MQTTTopics
    let discoveryPrefix: String
    let version: String
    /// The page, for the device's "Visit" link.
    let pageURL: String

    var nodeID: String { "viewfinder_\(topics.node)" }

    /// `<prefix>/+/viewfinder_<node>/+/config`: every config this host ever published.
    var ownConfigs: String { "\(discoveryPrefix)/+/\(nodeID)/+/config" }

    func configs(for camera: Camera) -> [Config] {
        let t = topics, c = camera.level, caps = camera.capabilities
        let state = t.state(c)
        var out: [Config] = []
        func add(_ component: String, _ entity: String, _ name: String?, _ fields: [String: JSONValue]) {
            var p: [String: JSONValue] = [
                "unique_id": .string("\(nodeID)_\(c)_\(entity)"),
                "object_id": .string("viewfinder_\(t.node)_\(c)_\(entity)"),
                "name": name.map(JSONValue.string) ?? .null,
                "availability_topic": .string(t.status),
                "payload_available": "online", "payload_not_available": "offline",
                "device": device(camera),
                "origin": ["name": "Viewfinder", "sw_version": .string(version)],
            ]
            for (k, v) in fields { p[k] = v }
            out.append(Config(topic: "\(discoveryPrefix)/\(component)/\(nodeID)/\(c)_\(entity)/config", payload: .object(p)))
        }
        add("camera", "camera", nil, ["topic": .string(t.snapshot(c))])
        add("button", "capture", "Take photo", ["command_topic": .string(t.command(c, "session/capture")), "payload_press": "{}",
                                                 "icon": "mdi:camera-iris"])
        add("switch", "recording", "Recording", [
            "command_topic": .string(t.command(c, "session/recording")),
            "payload_on": #"{"active": true}"#, "payload_off": #"{"active": false}"#,
            "state_topic": .string(state), "value_template": "{{ 'ON' if value_json.recording.active else 'OFF' }}",
            "state_on": "ON", "state_off": "OFF", "icon": "mdi:record-rec",
        ])
        if caps.torch {
            add("switch", "torch", "Torch", [
                "command_topic": .string(t.command(c, "session/torch")),
                "payload_on": #"{"mode": "on"}"#, "payload_off": #"{"mode": "off"}"#,
                "state_topic": .string(state), "value_template": "{{ value_json.torch.mode }}",
                "state_on": "on", "state_off": "off", "icon": "mdi:flashlight",
            ])
        }
        if caps.zoom.max > caps.zoom.min {
            add("number", "zoom", "Zoom", [
                "command_topic": .string(t.command(c, "session/zoom")), "command_template": #"{"factor": {{ value }}}"#,
                "state_topic": .string(state), "value_template": "{{ value_json.zoom.factor }}",
                "min": .number(caps.zoom.min), "max": .number(caps.zoom.max), "step": 0.1, "mode": "slider", "icon": "mdi:magnify",
            ])
        }
        if caps.focusModes.count > 1 {
            add("select", "focus_mode", "Focus mode", [
                "command_topic": .string(t.command(c, "session/focus")), "command_template": #"{"mode": "{{ value }}"}"#,
                "options": .array(caps.focusModes.map { .string($0.rawValue) }),
                "state_topic": .string(state), "value_template": "{{ value_json.focus.mode }}", "entity_category": "config",
            ])
        }
        if caps.exposureModes.count > 1 {
            // `custom` needs a duration and ISO a select cannot give.
            let modes = caps.exposureModes.filter { $0 != .custom }
            add("select", "exposure_mode", "Exposure mode", [
                "command_topic": .string(t.command(c, "session/exposure")), "command_template": #"{"mode": "{{ value }}"}"#,
                "options": .array(modes.map { .string($0.rawValue) }),
                "state_topic": .string(state), "value_template": "{{ value_json.exposure.mode }}", "entity_category": "config",
            ])
        }
        add("sensor", "fps", "Frame rate", [
            "state_topic": .string(state), "value_template": "{{ value_json.format.fps if value_json.format else 0 }}",
            "unit_of_measurement": "fps", "state_class": "measurement", "entity_category": "diagnostic",
        ])
        add("sensor", "code", "Last code", ["state_topic": .string(t.code(c)), "icon": "mdi:qrcode-scan"])
        if camera.hasMicrophone {
            add("switch", "mute", "Microphone muted", [
                "command_topic": .string(t.command(c, "session/audio")),
                "payload_on": #"{"muted": true}"#, "payload_off": #"{"muted": false}"#,
                "state_topic": .string(state), "value_template": "{{ 'ON' if value_json.audio and value_json.audio.muted else 'OFF' }}",
                "state_on": "ON", "state_off": "OFF", "icon": "mdi:microphone-off",
            ])
            add("sensor", "sound_level", "Sound level", [
                "state_topic": .string(t.soundLevel(c)), "value_template": "{{ value_json.rmsDb }}",
                "unit_of_measurement": "dBFS", "state_class": "measurement", "icon": "mdi:microphone",
            ])
        }
        add("binary_sensor", "motion", "Motion", [
            "state_topic": .string(state), "value_template": "{{ 'ON' if value_json.motion.active else 'OFF' }}",
            "payload_on": "ON", "payload_off": "OFF", "device_class": "motion",
        ])
        return out
    }

    private func device(_ camera: Camera) -> JSONValue {
        [
            "identifiers": [.string("\(nodeID)_\(camera.level)")],
            "name": .string("\(camera.name) (\(topics.node))"),
            "manufacturer": "Viewfinder",
            "model": .string(camera.kind == "synthetic" ? "Synthetic camera" : camera.name),
            "sw_version": .string(version),
            "configuration_url": .string(pageURL),
        ]
    }

    /// The object id a config topic names, if it is one of this host's.
    func objectID(ofConfig topic: String) -> String? {
        let parts = topic.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0] == discoveryPrefix, parts[2] == nodeID, parts[4] == "config" else { return nil }
        return String(parts[3])
    }
}
