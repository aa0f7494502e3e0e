// What the motion output reports: the state's `motion`, the `motion` event, and the figures
// /metrics shows.

import Foundation
import Motion

/// The state's `motion`: the settings, and what the detector sees now.
public struct MotionState: Sendable, Equatable, Codable {
    public var enabled: Bool
    /// An event is under way.
    public var active: Bool
    /// The last frame's score: percent of the unmasked picture that changed.
    public var score: Double
    /// What moved in the last frame, in the picture viewers see; nil when nothing did.
    public var box: NormalizedRect?
    /// The event's first moving frame (Unix seconds), while one is under way.
    public var since: Double?
    public var threshold: Double
    public var masks: [[[Double]]]
    public var preRoll: Double
    public var postRoll: Double
    public var record: Bool
    /// Seconds the pre-roll ring reaches back now (0 while it does not run: recording off or
    /// the camera stopped): an event that starts now gets this much before it, up to `preRoll`.
    public var preRollHeld: Double = 0

    public static func off(_ s: MotionSettings) -> MotionState {
        MotionState(enabled: s.enabled, active: false, score: 0, box: nil, since: nil, threshold: s.threshold,
                    masks: s.masks.map { $0.map { [$0.x, $0.y] } }, preRoll: s.preRoll, postRoll: s.postRoll, record: s.record)
    }

    /// `box` and `since` are spelled out as null, as the contract shows them.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(enabled, forKey: .enabled)
        try c.encode(active, forKey: .active)
        try c.encode((score * 100).rounded() / 100, forKey: .score)
        try c.encode(box, forKey: .box)
        try c.encode(since, forKey: .since)
        try c.encode(threshold, forKey: .threshold)
        try c.encode(masks, forKey: .masks)
        try c.encode(preRoll, forKey: .preRoll)
        try c.encode(postRoll, forKey: .postRoll)
        try c.encode(record, forKey: .record)
        try c.encode((preRollHeld * 10).rounded() / 10, forKey: .preRollHeld)
    }
}

/// The `motion` event: an event started, moved (at most `MotionOutput.movingInterval` apart,
/// with where), or ended (with its times and peak).
public struct MotionEvent: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable { case started, moving, ended }
    public var camera: String
    public var event: Kind
    /// When it happened: the first moving frame (started), this frame (moving), the last (ended).
    public var at: Double
    public var start: Double
    public var end: Double?
    public var peak: Peak?
    public var score: Double
    public var box: NormalizedRect?

    public struct Peak: Sendable, Equatable, Codable {
        public var at: Double
        public var score: Double
    }
}

/// The detector's figures since the server started, for /metrics.
public struct MotionFigures: Sendable, Equatable {
    public var frames: UInt64 = 0
    public var events: UInt64 = 0
    public var secondsInMotion: Double = 0
    /// CPU seconds the detection took (the capture thread's time inside the detector).
    public var cpuSeconds: Double = 0
    /// Frames by score: counts at or below each of `MotionFigures.buckets` (percent), cumulative.
    public var scoreBuckets: [UInt64] = Array(repeating: 0, count: MotionFigures.buckets.count)
    public var scoreSum: Double = 0

    public static let buckets: [Double] = [0.1, 0.5, 1, 2, 5, 10, 25, 50, 100]

    mutating func count(score: Double) {
        frames += 1
        scoreSum += score
        for (i, b) in Self.buckets.enumerated() where score <= b { scoreBuckets[i] += 1 }
    }
}
