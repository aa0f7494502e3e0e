// A camera's speaker, for talk-back: where a talker's voice is played (a doorbell's, a baby
// monitor's). One talk at a time opens it, plays what the talker says as it comes, and
// closes it; the format is the talk's (48 kHz mono s16: what the Opus decoder gives).

public protocol SpeakerDevice: AnyObject, Sendable {
    /// What the configuration named: `synthetic` or an ALSA PCM (`hw:CARD=Gadget,DEV=0`, `default`).
    var name: String { get }
    /// Opens the device for a talk in `format`. Throws what the device refuses (busy,
    /// missing, a rate it cannot play).
    func open(_ format: AudioFormat) throws(AudioError)
    /// Plays interleaved samples in the opened format, as they come (it may block for about
    /// a period while the device's buffer is full). A device lost meanwhile throws.
    func play(_ samples: UnsafeBufferPointer<Int16>) throws(AudioError)
    /// Ends the talk: what is queued plays out and the device closes. Idempotent.
    func close()
}
