// The synthetic frame drawn at the cost of what moves must be the frame drawn whole, byte for
// byte: the moving box, the codes' boxes, the background toned once per table, the scene's
// mean luma from the box alone. Both ways are rendered here for many frames and compared.

import CameraCore
import Foundation
import Testing
@testable import Capture

@Suite struct SceneRendererTests {
    /// A renderer with its own frame buffer (freed by the caller through `free`).
    static func renderer(_ kind: SyntheticSceneKind, _ w: Int, _ h: Int) -> (SceneRenderer, UnsafeMutableRawBufferPointer) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: w * h * 2, alignment: 16)
        buffer.initializeMemory(as: UInt8.self, repeating: 0x5A)  // not the background: every byte must be drawn
        let scene = SyntheticScene(kind: kind, label: "T", width: w, height: h)
        return (SceneRenderer(scene: scene, canvas: YUYVCanvas(buffer, width: w, height: h)), buffer)
    }

    static let codes = [
        try! PlacedCode(SceneCode(type: .qr, value: "hello", x: 0.3, y: 0.4, size: 0.3)),
        try! PlacedCode(SceneCode(type: .ean13, value: "4006381333931", x: 0.97, y: 0.9, size: 0.2)),  // cut by the edges
    ]

    // Small frames: the debug build's per-pixel loops run beside every live-server suite.
    @Test(arguments: [SyntheticSceneKind.bars, .person], [(320, 240), (352, 288)])
    func theBoxAloneGivesTheWholeFramesBytesAndLuma(_ kind: SyntheticSceneKind, _ size: (Int, Int)) {
        let (w, h) = size
        let (fast, a) = Self.renderer(kind, w, h), (whole, b) = Self.renderer(kind, w, h)
        defer { a.deallocate(); b.deallocate() }
        let tones = [Optics(blurRadius: 0, gain: 1.3, add: 5, du: -3, dv: 2),
                     Optics(blurRadius: 0, gain: 1, add: 0, du: 0, dv: 0),
                     Optics(blurRadius: 3, gain: 0.8, add: 0, du: 1, dv: -1)]
        for sequence in stride(from: UInt64(0), to: 130, by: 13) {
            for (i, optics) in tones.enumerated() {
                let codes = sequence % 2 == 0 ? Self.codes : []
                var lumaFast = -1.0, lumaWhole = -2.0
                fast.render(sequence: sequence, codes: codes) { lumaFast = $0; return optics }
                whole.render(sequence: sequence, codes: codes, wholeFrame: true) { lumaWhole = $0; return optics }
                #expect(lumaFast == lumaWhole, "frame \(sequence) tone \(i)")
                #expect(lumaWhole == whole.canvas.meanLuma() || i != 1, "frame \(sequence): the grid of meanLuma")
                if memcmp(a.baseAddress!, b.baseAddress!, w * h * 2) != 0 {
                    let first = (0..<(w * h * 2)).first { a[$0] != b[$0] }!
                    Issue.record("\(kind) \(w)x\(h) frame \(sequence) tone \(i): first difference at x \(first / 2 % w), y \(first / 2 / w)")
                    return
                }
            }
        }
    }

    @Test func theBackgroundIsTonedOncePerTable() {
        let (r, buffer) = Self.renderer(.bars, 320, 240)
        defer { buffer.deallocate() }
        let optics = Optics(blurRadius: 0, gain: 1.2, add: 0, du: 0, dv: 0)
        for s in 0..<30 { r.render(sequence: UInt64(s), codes: []) { _ in optics } }
        #expect(r.backgroundTonings == 1)
        r.render(sequence: 30, codes: []) { _ in Optics(blurRadius: 0, gain: 1.25, add: 0, du: 0, dv: 0) }
        #expect(r.backgroundTonings == 2)
    }
}
