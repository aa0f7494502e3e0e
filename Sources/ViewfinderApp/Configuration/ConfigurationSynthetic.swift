// config.json's `synthetic` section: what the stand-in cameras simulate for all of them
// (`cameras[].noise` overrides it per camera).

import JSON

extension Configuration {
    public struct SyntheticSettings: Sendable, Equatable {
        /// The sensor's shot and read noise at the exposure's ISO (docs/API.md); off: a flat test card.
        public var noise = true
    }

    static func decodeSynthetic(_ root: JSONObjectReader, into c: inout Configuration) throws(JSONFieldError) {
        guard let s = try root.object("synthetic") else { return }
        c.synthetic.noise = try s.bool("noise") ?? c.synthetic.noise
        try s.finish()
    }
}
