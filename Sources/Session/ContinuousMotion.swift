// The session's continuous move (CaptureSession+Move): which of its parts still move, and the
// waiter of its end on the session's clock. The pan itself is `PipelineSettings`' curve.

/// A continuous move under way; `token` tells it from a newer one.
struct ContinuousMotion {
    private(set) var token = 0
    var panning = false
    var zooming = false
    private var ending: Task<Void, Never>?

    /// A new move of these parts, replacing any: `end` waits for its timeout (the token its).
    mutating func begin(panning: Bool, zooming: Bool, end: (Int) -> Task<Void, Never>) {
        ending?.cancel()
        token += 1
        self.panning = panning
        self.zooming = zooming
        ending = panning || zooming ? end(token) : nil
    }

    /// Its end's waiter is cancelled once nothing of it moves (a stop, a zoom or centre call).
    mutating func endIfIdle() {
        guard !panning && !zooming else { return }
        ending?.cancel()
        ending = nil
    }
}
