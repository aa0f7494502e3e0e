// What takes the microphone's buffers (the audio side of AVCaptureOutput): the audio data
// output, and the camera's AAC encode that the movie and the live streams share. Like
// a video output's `take`, `takeAudio` runs on the input's capture thread for every buffer:
// it copies what it keeps and returns, it never blocks.

public protocol AudioConsumer: AnyObject, Sendable {
    /// The microphone started (or was reopened) delivering `format`.
    func audioStarted(_ format: AudioFormat)
    /// A buffer, in capture order with no gaps in time (an overrun's gap arrives as silence).
    func takeAudio(_ buffer: borrowing AudioBuffer)
    /// The microphone stopped or was lost: no more buffers until the next `audioStarted`.
    func audioEnded()
}

extension AudioConsumer {
    public func audioStarted(_ format: AudioFormat) {}
    public func audioEnded() {}
}

/// An output of the graph that takes sound (the state lists it); a shared encoder that
/// outputs subscribe to is a consumer only.
public protocol AudioOutput: MediaOutput, AudioConsumer {}

extension AudioOutput {
    public var mediaTypes: [MediaType] { [.audio] }
}

/// A level meter's reading over a window of samples: the peak and the RMS in dBFS (full scale
/// is 0 dB; a full-scale sine reads 0 dB peak and −3 dB RMS), floored at −100 dB for silence.
public struct AudioLevel: Sendable, Equatable, Codable {
    public var peakDb: Double
    public var rmsDb: Double

    public init(peakDb: Double, rmsDb: Double) {
        self.peakDb = peakDb
        self.rmsDb = rmsDb
    }

    public static let floor = -100.0

    /// dBFS of a linear level (1 is full scale), to a tenth of a dB.
    public static func decibels(_ linear: Double) -> Double {
        guard linear > 0 else { return floor }
        return max(floor, (20 * log10(linear) * 10).rounded() / 10)
    }
}

/// Sums a window of 16-bit samples (every channel) into a reading.
public struct LevelMeter: Sendable {
    /// Frames a reading covers.
    public let window: Int
    private var peak: Int32 = 0
    private var squares: Double = 0
    private var samples = 0
    private var frames = 0

    public init(window: Int) { self.window = max(1, window) }

    /// Adds a buffer's samples; answers a reading each time a window fills.
    public mutating func add(_ buffer: borrowing AudioBuffer) -> AudioLevel? {
        guard buffer.format.encoding == .s16le else { return nil }
        let values = buffer.bytes.bindMemory(to: Int16.self)
        var reading: AudioLevel?
        for v in values {
            let m = abs(Int32(v))
            if m > peak { peak = m }
            squares += Double(v) * Double(v)
            samples += 1
        }
        frames += buffer.frames
        if frames >= window {
            reading = AudioLevel(peakDb: AudioLevel.decibels(Double(peak) / 32_768),
                                 rmsDb: AudioLevel.decibels((squares / Double(max(1, samples))).squareRoot() / 32_768))
            peak = 0
            squares = 0
            samples = 0
            frames = 0
        }
        return reading
    }
}

#if canImport(Glibc)
import Glibc
#endif
