// A transport's hold on a camera's encoded sound: the AudioEncodeStream it was subscribed to
// and its id there, given up once.

import SystemSupport

/// A transport's subscription to a camera's AAC or Opus packets (`CaptureSession.subscribeSound`).
public final class SoundSubscription: Sendable {
    private let stream: AudioEncodeStream
    private let id: Int
    private let cancelled = Locked(false)

    init(stream: AudioEncodeStream, id: Int) {
        self.stream = stream
        self.id = id
    }

    /// No more packets (once).
    public func cancel() {
        guard cancelled.withLock({ c in defer { c = true }; return !c }) else { return }
        stream.unsubscribe(id)
    }

    deinit { cancel() }
}
