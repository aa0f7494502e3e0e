// One live.mp4 client's fMP4 stream: its own init segment, and its own fragments numbered
// from 1. Times count from the client's first keyframe (its capture time is 0), so a client
// that joins a stream which ran before starts at 0 with no gap (one muxer shared by every
// client ran its timeline on across the seconds nobody watched: a late joiner's first frame
// lasted that long). With sound, a frame is placed at its capture time in 90 kHz ticks and an
// AAC packet at the capture time of its first sample in samples — both on the clock the
// frames and the microphone share, so a beep and the frame captured with it play together;
// sound captured before that keyframe is left out. Muxing is boxing: the encodes stay one per
// stream.
//
// The sound's timeline must stay whole for a player (Media Source Extensions stalls at a hole
// in any track): a new encoder run (the microphone reopened, a gap in its buffers) or no sound
// for two seconds of picture (the microphone stopped or failed) ends the stream, as a new
// format does, and the player's reconnect gets a stream as the camera is then.
// One owner: the client's pump (under its subscription's lock).

import Movie

final class LiveClientMux {
    enum Out {
        case bytes([UInt8])
        case end
    }

    /// Seconds of picture without sound before the stream ends.
    static let silenceLimit = 2.0

    private let fragmenter: LiveFragmenter
    private let sampleRate: Int
    private let hasSound: Bool
    /// The first keyframe's capture time: time 0 of the stream.
    private var origin: Double?
    /// The sound's next pts (samples) and the encoder run it continues.
    private var nextSample: Int64?
    private var run: Int?
    /// The capture time the sound has reached, and the picture's latest.
    private var soundUntil: Double?
    private var pictureAt: Double = 0

    init(_ info: LiveStreamInfo, sound: AudioTrackInfo?) throws(MovieError) {
        fragmenter = try LiveFragmenter(width: info.width, height: info.height, fps: info.fps, extradata: info.extradata, audio: sound)
        sampleRate = sound?.sampleRate ?? 1
        hasSound = sound != nil
    }

    var initSegment: [UInt8] { fragmenter.initSegment }

    /// Whether the first keyframe came (sound before it has no place yet).
    var started: Bool { origin != nil }

    /// The fragment of `unit` (the first the client gets is a keyframe: it sets time 0).
    func picture(_ unit: AccessUnit) -> Out {
        let origin = self.origin ?? unit.time
        self.origin = origin
        pictureAt = unit.time
        if hasSound && pictureAt - (soundUntil ?? origin) > Self.silenceLimit { return .end }
        let pts = Int64(((unit.time - origin) * Double(LiveEncoder.ticksPerSecond)).rounded())
        guard let bytes = try? fragmenter.fragment(unit, pts: pts) else { return .end }
        return .bytes(bytes)
    }

    /// The fragments of `packets` (in order), from time 0 on.
    func sound(_ packets: [AudioPacket]) -> Out {
        guard let origin, !packets.isEmpty else { return .bytes([]) }
        var out: [UInt8] = []
        for p in packets {
            if let run, p.run != run { return .end }  // a new timeline: the player starts again
            let pts: Int64
            if let next = nextSample {
                pts = next
            } else {
                let first = Int64(((p.time - origin) * Double(sampleRate)).rounded())
                guard first >= 0 else { continue }  // captured before the first frame
                pts = first
                run = p.run
            }
            guard let bytes = try? fragmenter.fragment(audio: p, pts: pts) else { return .end }
            out += bytes
            nextSample = pts + Int64(p.samples)
            soundUntil = p.time + Double(p.samples) / Double(sampleRate)
        }
        return .bytes(out)
    }
}
