// A continuous pan and tilt, as `ZoomRamp` is a continuous zoom: a curve of the crop's centre
// over time that the capture thread evaluates per frame, so a pan moves every frame by what
// its time says and the session is called twice (start and end), not once a step.

/// The crop's centre moving from `from` at `velocity` (the source's coordinates a second) from
/// `start` until `end` (monotonic seconds), within the frame; still before `start` and after `end`.
public struct PanRamp: Sendable, Equatable {
    public var from: Point
    public var velocity: Point
    public var start: Double
    public var end: Double

    public init(from: Point, velocity: Point, start: Double, end: Double) {
        self.from = from
        self.velocity = velocity
        self.start = start
        self.end = end
    }

    public static func fixed(_ c: Point) -> PanRamp { PanRamp(from: c, velocity: .zero, start: 0, end: 0) }

    /// A still centre: nothing set it going (a pan past its end is not fixed until it is held).
    public var isFixed: Bool { velocity == .zero }

    public func center(at t: Double) -> Point {
        let dt = min(max(0, t - start), max(0, end - start))
        return Point(x: min(max(from.x + velocity.x * dt, 0), 1), y: min(max(from.y + velocity.y * dt, 0), 1))
    }

    public func isMoving(at t: Double) -> Bool { !isFixed && t < end }
}
