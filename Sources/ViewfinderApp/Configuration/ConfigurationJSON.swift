// The effective configuration written back in config.json's shape and key order, for
// `viewfinder check-config`: what it prints parses to the same configuration.

import Foundation
import Session

extension Configuration {
    public var jsonText: String {
        func str(_ s: String?) -> String {
            guard let s else { return "null" }
            var out = "\""
            for u in s.unicodeScalars {
                switch u {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\t": out += "\\t"
                case "\r": out += "\\r"
                case _ where u.value < 0x20: out += String(format: "\\u%04x", u.value)
                default: out.unicodeScalars.append(u)
                }
            }
            return out + "\""
        }
        func object(_ fields: [(String, String)]) -> String {
            "{" + fields.map { "\(str($0.0)): \($0.1)" }.joined(separator: ", ") + "}"
        }
        let cams: String
        switch cameras {
        case .auto: cams = str("auto")
        case .synthetic: cams = str("synthetic")
        case .list(let entries):
            cams = "[\n" + entries.map { e in
                var f: [(String, String)] = [("id", str(e.id)), ("source", str(e.source.rawValue))]
                if let d = e.device { f.append(("device", str(d))) }
                if let p = e.path { f.append(("path", str(p))) }
                if let p = e.position { f.append(("position", str(p))) }
                if let t = e.torchLED { f.append(("torchLED", str(t))) }
                if let a = e.autostart { f.append(("autostart", "\(a)")) }
                if let p = e.preset { f.append(("preset", str(p))) }
                if let n = e.fps { f.append(("fps", "\(n)")) }
                if let t = e.timecode { f.append(("timecode", "\(t)")) }
                if let n = e.noise { f.append(("noise", "\(n)")) }
                if let m = e.motion { f.append(("motion", Self.motionJSON(m))) }
                if !e.codes.isEmpty {
                    f.append(("codes", "[" + e.codes.map { c in
                        object([("type", str(c.type.rawValue)), ("value", str(c.value)),
                                ("x", "\(c.x)"), ("y", "\(c.y)"), ("size", "\(c.size)")])
                    }.joined(separator: ", ") + "]"))
                }
                return "    " + object(f)
            }.joined(separator: ",\n") + "\n  ]"
        }
        var listen: [(String, String)] = []
        if !server.listen.isEmpty {
            let items: [String] = server.listen.map { l in
                var f: [(String, String)] = [("port", "\(l.port)"), ("camera", str(l.camera))]
                if let h = l.host { f.append(("host", str(h))) }
                return object(f)
            }
            listen = [("listen", "[" + items.joined(separator: ", ") + "]")]
        }
        let sections: [(String, String)] = [
            ("server", object([("host", str(server.host)), ("port", "\(server.port)"),
                               ("publicDirectory", str(server.publicDirectory)),
                               ("allowOrigin", server.allowOrigins.isEmpty ? "null"
                                    : "[" + server.allowOrigins.map { str($0) }.joined(separator: ", ") + "]"),
                               ("maxConnections", "\(server.maxConnections)"),
                               ("maxConnectionsPerAddress", "\(server.maxConnectionsPerAddress)"),
                               ("headerTimeout", "\(server.headerTimeout)"),
                               ("trustedProxies", "[" + server.trustedProxies.map { str($0) }.joined(separator: ", ") + "]")]
                              + (server.threads.map { [("threads", "\($0)")] } ?? [])
                              + (server.tls.map { [("tls", object([("certificate", str($0.certificate)), ("key", str($0.key))]))] } ?? [])
                              + listen)),
            ("cameras", cams),
            ("session", object([("camera", str(session.camera)), ("preset", str(session.preset)),
                                ("fps", "\(session.fps)"), ("autostart", "\(session.autostart)")])),
            ("stream", object([("quality", "\(stream.quality)")] + (stream.maxFps.map { [("maxFps", "\($0)")] } ?? [])
                              + [("subsampling", str(stream.subsampling.rawValue)), ("workers", "\(stream.workers)")])),
            ("capture", object([("quality", "\(capture.quality)"), ("directory", str(capture.directory))])),
            ("recording", object([("directory", str(recording.directory)), ("preset", str(recording.preset))])),
            ("metadata", object([("rate", "\(metadata.rate)")])),
        ] + liveJSON(str) + [("synthetic", object([("noise", "\(synthetic.noise)")])),
                             ("motion", Self.motionJSON(MotionChange(enabled: motion.enabled, threshold: motion.threshold, masks: motion.masks,
                                                                     preRoll: motion.preRoll, postRoll: motion.postRoll, record: motion.record))),
                             ("storage", "{\"maxBytes\": \(storage.maxBytes.map { "\($0)" } ?? "null"), \"maxAge\": \(storage.maxAge.map { "\($0)" } ?? "null"), \"minFreeBytes\": \(storage.minFreeBytes.map { "\($0)" } ?? "null")}"),
                             ("mqtt", mqttJSON(str)),
                             ("state", object([("persist", "\(state.persist)"), ("directory", str(state.directory))]))]
            + authSection
        
        return "{\n" + sections.map { "  \(str($0.0)): \($0.1)" }.joined(separator: ",\n") + "\n}\n"
    }
}

extension Configuration {
    /// A motion section (or change) with the fields it sets.
    static func motionJSON(_ m: MotionChange) -> String {
        var f: [String] = []
        if let v = m.enabled { f.append("\"enabled\": \(v)") }
        if let v = m.threshold { f.append("\"threshold\": \(v)") }
        if let v = m.masks { f.append("\"masks\": [" + v.map { p in "[" + p.map { "[\($0.x), \($0.y)]" }.joined(separator: ", ") + "]" }.joined(separator: ", ") + "]") }
        if let v = m.preRoll { f.append("\"preRoll\": \(v)") }
        if let v = m.postRoll { f.append("\"postRoll\": \(v)") }
        if let v = m.record { f.append("\"record\": \(v)") }
        return "{" + f.joined(separator: ", ") + "}"
    }

    /// The accounts as the file holds them (hashes only), when there are any.
    var authSection: [(String, String)] {
        switch auth.mode {
        case .unconfigured: return []
        case .none: return [("auth", "\"none\"")]
        case .accounts:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let data = (try? encoder.encode(AuthConfiguration.encode(auth))) ?? Data("null".utf8)
            return [("auth", String(decoding: data, as: UTF8.self))]
        }
    }
}
