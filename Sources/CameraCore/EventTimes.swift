// When an event happened: shared by the motion detector (Motion) and the movie that records
// the event (Movie), which know nothing of each other.

/// An event's times, Unix seconds: its first moving frame, its highest score, its last moving
/// frame (a motion event's, and the motion movie's that records it).
public struct EventTimes: Sendable, Equatable, Codable {
    public var start: Double
    public var peak: Double
    public var end: Double
    public init(start: Double, peak: Double, end: Double) {
        self.start = start
        self.peak = peak
        self.end = end
    }
}
