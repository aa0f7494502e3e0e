// A camera's motion settings, as config.json and `POST /api/session/motion` give them, with
// the limits that make them sensible.

public struct MotionSettings: Sendable, Equatable {
    public var enabled: Bool
    /// Percent of the unmasked picture that must change for a frame to move.
    public var threshold: Double
    public var masks: [MotionPolygon]
    /// Seconds of picture an event's movie keeps before its first moving frame…
    public var preRoll: Double
    /// …and after its last; events closer than this share one movie.
    public var postRoll: Double
    /// Whether events are recorded as movies (false: detected and announced only).
    public var record: Bool

    public static let thresholdRange = 0.01...100.0
    public static let preRollRange = 0.0...30.0
    public static let postRollRange = 0.0...60.0

    public init(enabled: Bool = false, threshold: Double = 1, masks: [MotionPolygon] = [], preRoll: Double = 3,
                postRoll: Double = 5, record: Bool = true) {
        self.enabled = enabled
        self.threshold = threshold
        self.masks = masks
        self.preRoll = preRoll
        self.postRoll = postRoll
        self.record = record
    }

    /// What is wrong with these settings, naming the field; nil when they are sound.
    public var problem: (field: String, message: String)? {
        if !threshold.isFinite || !Self.thresholdRange.contains(threshold) {
            return ("threshold", "a percentage of the picture within 0.01…100")
        }
        if !preRoll.isFinite || !Self.preRollRange.contains(preRoll) { return ("preRoll", "seconds within 0…30") }
        if !postRoll.isFinite || !Self.postRollRange.contains(postRoll) { return ("postRoll", "seconds within 0…60") }
        if masks.count > MotionMask.maxPolygons { return ("masks", "at most \(MotionMask.maxPolygons) polygons") }
        for (i, polygon) in masks.enumerated() {
            guard (3...MotionMask.maxPoints).contains(polygon.count) else {
                return ("masks[\(i)]", "a polygon of 3 to \(MotionMask.maxPoints) points")
            }
            for p in polygon where !(p.x.isFinite && p.y.isFinite && (0...1).contains(p.x) && (0...1).contains(p.y)) {
                return ("masks[\(i)]", "points are [x, y] within 0…1 of the picture viewers see")
            }
        }
        return nil
    }
}
