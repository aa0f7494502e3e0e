// config.json's `synthetic` section: what the stand-in cameras simulate for all of them
// (`cameras[].noise` and `cameras[].audio` override it per camera).

import JSON

extension Configuration {
    public struct SyntheticSettings: Sendable, Equatable {
        /// The sensor's shot and read noise at the exposure's ISO (docs/API.md); off: a flat test card.
        public var noise = true
        /// Each synthetic camera has the synthetic microphone unless its entry names another
        /// (`cameras[].audio`); off: the synthetic cameras are mute.
        public var microphone = true
    }

    static func decodeSynthetic(_ root: JSONObjectReader, into c: inout Configuration) throws(JSONFieldError) {
        guard let s = try root.object("synthetic") else { return }
        c.synthetic.noise = try s.bool("noise") ?? c.synthetic.noise
        c.synthetic.microphone = try s.bool("microphone") ?? c.synthetic.microphone
        try s.finish()
    }
}
