// config.json's `motion` (every camera's; `cameras[].motion` changes it for one),
// `metadata` (the code scanner's rate) and `storage` (retention of movies and photos), read as
// `POST /api/session/motion` reads its body.

import JSON
import Motion
import Session

extension Configuration {
    /// The metadata output.
    public struct MetadataSettings: Sendable, Equatable {
        /// Scans a second at most, per camera.
        public var rate = 10.0
    }

    /// Oldest first, never a file being written or one marked `keep`: movies and photos are
    /// deleted until every limit holds. nil: no limit.
    public struct StorageSettings: Sendable, Equatable {
        /// Bytes the movies and photos together may take.
        public var maxBytes: Int64?
        /// Seconds a movie or photo is kept.
        public var maxAge: Double?
        /// Bytes left free on the file system of the movie directory (and of the photos').
        public var minFreeBytes: Int64?
        public var isLimited: Bool { maxBytes != nil || maxAge != nil || minFreeBytes != nil }
    }

    static func decodeMotion(_ root: JSONObjectReader, into c: inout Configuration) throws(JSONFieldError) {
        if let m = try root.object("motion") {
            c.motion = try motionChange(m).applied(to: MotionSettings())
            if let (field, problem) = c.motion.problem { throw JSONFieldError(path: "motion.\(field)", problem: problem) }
        }
        if case .list(let entries) = c.cameras {
            for (i, e) in entries.enumerated() {
                if let change = e.motion, let (field, problem) = change.applied(to: c.motion).problem {
                    throw JSONFieldError(path: "cameras[\(i)].motion.\(field)", problem: problem)
                }
            }
        }
        if let s = try root.object("storage") {
            c.storage.maxBytes = try s.int("maxBytes", in: 1...Int(Int64.max / 2)).map(Int64.init)
            c.storage.maxAge = try s.double("maxAge", in: 1...1e10)
            c.storage.minFreeBytes = try s.int("minFreeBytes", in: 0...Int(Int64.max / 2)).map(Int64.init)
            try s.finish()
        }
    }
}

/// `{"enabled"?, "threshold"?, "masks"?, "preRoll"?, "postRoll"?, "record"?}`: the motion call's
/// body and config's `motion`. Types are checked here; ranges by `MotionSettings.problem`.
func motionChange(_ o: JSONObjectReader) throws(JSONFieldError) -> MotionChange {
    let change = MotionChange(enabled: try o.bool("enabled"), threshold: try o.double("threshold"),
                              masks: try o.any("masks", expected: "a list of polygons").map { v throws(JSONFieldError) in try motionMasks(v, path: "masks") },
                              preRoll: try o.double("preRoll"), postRoll: try o.double("postRoll"), record: try o.bool("record"))
    try o.finish()
    return change
}

/// `[[[x, y], …], …]`: polygons of points in the picture viewers see.
func motionMasks(_ value: JSONValue, path: String) throws(JSONFieldError) -> [MotionPolygon] {
    guard case .array(let polygons) = value else {
        throw JSONFieldError(path: path, problem: "expected a list of polygons ([[x, y], …]), found \(value.typeName)")
    }
    var out: [MotionPolygon] = []
    for (i, p) in polygons.enumerated() {
        guard case .array(let points) = p else {
            throw JSONFieldError(path: "\(path)[\(i)]", problem: "expected a polygon: a list of [x, y] points, found \(p.typeName)")
        }
        var polygon: MotionPolygon = []
        for (j, point) in points.enumerated() {
            guard case .array(let xy) = point, xy.count == 2, case .number(let x) = xy[0], case .number(let y) = xy[1] else {
                throw JSONFieldError(path: "\(path)[\(i)][\(j)]", problem: "expected a point [x, y] of two numbers")
            }
            polygon.append(MotionPoint(x: x, y: y))
        }
        out.append(polygon)
    }
    return out
}

/// `POST /api/session/motion`'s body.
struct MotionBody: RequestBody {
    var change: MotionChange
    init(reading body: JSONObjectReader) throws(JSONFieldError) { change = try motionChange(body) }
}

/// `{"keep": true|false}`: a movie or photo kept from retention, or no longer.
struct KeepBody: RequestBody {
    var keep: Bool
    init(reading body: JSONObjectReader) throws(JSONFieldError) {
        guard let keep = try body.bool("keep") else { throw JSONFieldError(path: "keep", problem: "required: true or false") }
        self.keep = keep
        try body.finish()
    }
}
