// The saved state (issue 57): what lasts, and what became of it.
//
//   GET /api/state   {"persist", "file", "loadedFrom", "problems", "dropped", "saved",
//                     "error", "writes", "state"}

import HTTPServer
import JSON

/// What `GET /api/state` answers.
struct SavedStateReport: Encodable {
    var persist: Bool
    /// state.json's path; null when nothing is saved.
    var file: String?
    /// Where the state came from at start: `current` (state.json), `previous` (its last good
    /// copy, state.json being missing or unusable), `none`.
    var loadedFrom: String
    /// Files set aside at start, each with why.
    var problems: [String]
    /// Saved settings not applied at start (today's camera or configuration refuses them).
    var dropped: [String]
    /// Every change so far is on disk.
    var saved: Bool
    /// The last write's failure (a full disk, a read-only directory), until one succeeds.
    var error: String?
    var writes: Int
    /// What is saved: the parts that differ from where the configuration starts each camera.
    var state: JSONValue

    func encode(to encoder: Encoder) throws {
        enum K: String, CodingKey { case persist, file, loadedFrom, problems, dropped, saved, error, writes, state }
        var c = encoder.container(keyedBy: K.self)
        try c.encode(persist, forKey: .persist)
        try c.encode(file, forKey: .file)
        try c.encode(loadedFrom, forKey: .loadedFrom)
        try c.encode(problems, forKey: .problems)
        try c.encode(dropped, forKey: .dropped)
        try c.encode(saved, forKey: .saved)
        try c.encode(error, forKey: .error)
        try c.encode(writes, forKey: .writes)
        try c.encode(state, forKey: .state)
    }
}

extension Application {
    func addStateRoutes(_ r: inout Router) {
        r.get("/api/state") { [self] _ in json(savedStateReport()) }
    }

    func savedStateReport() -> SavedStateReport {
        guard let keeper else {
            return SavedStateReport(persist: false, file: nil, loadedFrom: "none", problems: [], dropped: [], saved: true,
                                    error: nil, writes: 0, state: .object([:]))
        }
        let report = keeper.report, status = keeper.status
        return SavedStateReport(persist: true, file: keeper.file.path, loadedFrom: report.loaded.rawValue, problems: report.problems,
                                dropped: report.dropped, saved: status.saved, error: status.error, writes: status.writes,
                                state: keeper.snapshot())
    }
}
