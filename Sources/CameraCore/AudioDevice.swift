// The seam every microphone sits behind (AVCaptureDevice of media type audio): an ALSA
// capture PCM, or the synthetic microphone. Like a camera, it owns its capture thread and
// delivers buffers stamped on the one capture clock (Sample.swift): wall-clock seconds at
// the buffer's first sample, so sound and picture line up wherever they meet.

import SystemSupport

/// Receives each buffer on the microphone's capture thread. It must not keep `buffer.bytes`.
public typealias AudioHandler = @Sendable (borrowing AudioBuffer) -> Void

public protocol AudioDevice: AnyObject, Sendable {
    /// What the configuration named: `synthetic`, an ALSA PCM (`hw:CARD=C920,DEV=0`,
    /// `default`), or what `auto` found for the camera.
    var name: String { get }
    /// What the device offers: rates, channels, its mixer's capture gain. Read when the device
    /// was last opened (a running device cannot be opened twice to ask), else by opening it.
    func capabilities() throws(AudioError) -> AudioCapabilities
    /// Opens the device and starts delivering buffers to `handler`; answers the format it
    /// captures in (the device's native rate, 48 kHz where it has it; periods of ≤ 10 ms).
    func start(handler: @escaping AudioHandler) throws(AudioError) -> AudioFormat
    /// Stops delivery and closes the device; returns once no more buffers will be delivered. Idempotent.
    func stop()
    /// Called once per start, from the capture thread, when a running device is lost
    /// (unplugged, an I/O error): delivery has stopped and the device is closed.
    func setInterruptionHandler(_ handler: @escaping @Sendable (AudioError) -> Void)
    /// Sets the mixer's capture gain (stepped as the mixer steps it) and answers what it
    /// reads back. Throws `.noMixer` when the device has none: the session's gain is then digital.
    func setMixerGain(_ db: Double) throws(AudioError) -> Double
    /// Overruns since the device was made: the capture thread fell behind and samples were
    /// lost (each one recovered, the gap filled with silence so the timeline keeps its time).
    var overruns: UInt64 { get }
}

extension AudioDevice {
    public func setInterruptionHandler(_ handler: @escaping @Sendable (AudioError) -> Void) {}
    public func setMixerGain(_ db: Double) throws(AudioError) -> Double { throw .noMixer }
    public var overruns: UInt64 { 0 }
}

/// What a microphone offers, as `/api/cameras` lists it.
public struct AudioCapabilities: Sendable, Equatable, Codable {
    public struct Gain: Sendable, Equatable, Codable {
        public var min: Double, max: Double, step: Double
        public init(min: Double, max: Double, step: Double) {
            self.min = min
            self.max = max
            self.step = step
        }
    }
    /// The standard rates it takes, in Hz.
    public var rates: [Int]
    /// Channel counts it takes.
    public var channels: [Int]
    /// Whether a mixer sets its capture gain (else the gain is applied digitally).
    public var mixer: Bool
    /// The capture gain's range in dB: the mixer's, or the digital one's.
    public var gainDb: Gain

    public init(rates: [Int], channels: [Int], mixer: Bool, gainDb: Gain) {
        self.rates = rates
        self.channels = channels
        self.mixer = mixer
        self.gainDb = gainDb
    }

    /// The gain a device without a mixer gets, in software.
    public static let digitalGain = Gain(min: -40, max: 30, step: 0.5)
}

public enum AudioError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An ALSA (or system) call failed: `call` names it and what it was called on; `errno`
    /// is what it answered (ALSA returns errno codes negated).
    case system(SystemError)
    /// The device does not take what was asked (a rate, a channel count).
    case unsupported(String)
    /// `auto` found no microphone for the camera, or the device is gone.
    case unavailable(String)
    /// The device has no mixer to set a gain on.
    case noMixer

    public static func alsa(_ call: String, _ rc: Int32) -> AudioError { .system(SystemError(call: call, errno: -rc)) }

    public var description: String {
        switch self {
        case .system(let e): e.description
        case .unsupported(let m): "unsupported: \(m)"
        case .unavailable(let m): "no microphone: \(m)"
        case .noMixer: "the device has no capture mixer"
        }
    }
}
