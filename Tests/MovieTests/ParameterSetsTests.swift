// SPS and PPS of a hardware encoder's stream (issue 38): learnt from its first IDR, put back
// before a later IDR that lacks them.

import Testing
@testable import Movie

@Suite struct ParameterSetsTests {
    /// A hardware encoder's SPS and PPS come in band: learnt from its first IDR (the extradata),
    /// and put back before a later IDR that lacks them.
    @Test func parameterSetsAreLearntAndPutBack() {
        let sps: [UInt8] = [0, 0, 0, 1, 0x67, 0x4d, 0x00, 0x1f], pps: [UInt8] = [0, 0, 0, 1, 0x68, 0xee, 0x3c, 0x80]
        let idr: [UInt8] = [0, 0, 1, 0x65, 0x88, 0x84]
        var sets = ParameterSets()
        #expect(sets.keyframe(idr) == idr, "nothing to put back before any is known")
        #expect(sets.keyframe(sps + pps + idr) == sps + pps + idr)
        #expect(sets.annexB == sps + pps)
        #expect(sets.keyframe(idr) == sps + pps + idr)
        #expect(ParameterSets.units(sps + pps + idr).map(\.type) == [7, 8, 5])
    }
}
