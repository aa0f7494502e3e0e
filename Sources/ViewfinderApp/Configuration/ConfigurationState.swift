// config.json's `state` section (issue 57): whether what a user changes at runtime is saved
// and replayed at the next start, and where. A relative directory is the config file's
// (`--config /etc/x/config.json` → /etc/x/state), the working directory's without a file.

import JSON

extension Configuration {
    public struct StateSettings: Sendable, Equatable {
        /// false: changes last while the server runs, as before issue 57.
        public var persist = true
        /// Holds `state.json` and its previous copy.
        public var directory = "state"
        /// The state file's path.
        public var file: String { (directory.hasSuffix("/") ? directory : directory + "/") + "state.json" }
    }

    static func decodeState(_ root: JSONObjectReader, into c: inout Configuration) throws(JSONFieldError) {
        guard let s = try root.object("state") else { return }
        c.state.persist = try s.bool("persist") ?? c.state.persist
        if let d = try s.string("directory") {
            guard !d.isEmpty else { throw JSONFieldError(path: "state.directory", problem: "a directory, not empty") }
            c.state.directory = d
        }
        try s.finish()
    }
}
