// SPS and PPS of an H.264 stream whose encoder has no global header (the hardware ones put
// them in band, and some only before the first IDR): learnt from the first keyframe that
// carries them, and put back before a keyframe that lacks them, so every IDR starts a stream
// a client can join (RTSP and WebRTC clients join at one) and an fMP4 init segment has its avcC.

struct ParameterSets {
    /// SPS then PPS, each with a four-byte start code (an avcC's source); empty until learnt.
    private(set) var annexB: [UInt8] = []

    /// The NAL unit types of an Annex B access unit, in order, with their byte ranges.
    static func units(_ bytes: [UInt8]) -> [(type: UInt8, range: Range<Int>)] {
        var starts: [(payload: Int, code: Int)] = []
        var i = 0
        while i + 3 <= bytes.count {
            if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 {
                let code = i > 0 && bytes[i - 1] == 0 ? i - 1 : i
                starts.append((i + 3, code))
                i += 3
            } else {
                i += 1
            }
        }
        return starts.enumerated().compactMap { n, s in
            let end = n + 1 < starts.count ? starts[n + 1].code : bytes.count
            guard s.payload < end else { return nil }
            return (bytes[s.payload] & 0x1f, s.payload..<end)
        }
    }

    /// A keyframe's bytes with the parameter sets before it: learnt from it when it has them,
    /// put back when it has none and they are known.
    mutating func keyframe(_ bytes: [UInt8]) -> [UInt8] {
        let nals = Self.units(bytes)
        let sps = nals.filter { $0.type == 7 }, pps = nals.filter { $0.type == 8 }
        if !sps.isEmpty && !pps.isEmpty {
            annexB = (sps + pps).flatMap { [0, 0, 0, 1] + bytes[$0.range] }
            return bytes
        }
        return annexB.isEmpty ? bytes : annexB + bytes
    }
}
