// `viewfinder-bench motion WIDTH HEIGHT SECONDS ISO WALKERS [FIRST_FRAME]`: the motion
// detector on the synthetic camera's own frames (scene, lens, exposure, sensor noise, caption),
// made as fast as they can be drawn, so an hour of still scene takes minutes. The scene holds
// still; with WALKERS > 0, that many walkers cross one after another (3 s each, every 8 s).
// Prints JSON: frames, events, walkers seen and their delays, the detector's time per frame.

import CameraCore
import Capture
import Foundation
import Motion
import SystemSupport

func runMotion(_ args: [String]) -> Int32 {
    guard args.count >= 7, let width = Int(args[2]), let height = Int(args[3]), let seconds = Double(args[4]),
          let iso = Double(args[5]), let walkers = Int(args[6]) else {
        FileHandle.standardError.write(Data("usage: viewfinder-bench motion WIDTH HEIGHT SECONDS ISO WALKERS [FIRST_FRAME]\n".utf8))
        return 2
    }
    let firstFrame = args.count > 7 ? UInt64(args[7]) ?? 0 : 0
    let fps = 30
    let camera = SyntheticCamera(id: "rear", position: .rear)
    camera.staging.moving = false
    var s = DeviceSettings(for: camera.capabilities)
    s.exposure.mode = .custom
    s.exposure.iso = iso
    s.exposure.duration = 1.0 / 60 * 100 / iso  // as bright at every ISO: only the grain grows
    _ = try? camera.apply(SettingsChange(old: nil, new: s))
    let source = camera.frameSource(format: VideoFormat(pixelFormat: .yuyv, width: width, height: height, fps: fps))
    let detector = MotionDetector(width: width, height: height, fps: fps)
    let settings = MotionSettings(enabled: true)
    var tracker = MotionTracker()
    let t0 = 1_000_000.0 + Double(firstFrame) / Double(fps)
    let entries = (0..<walkers).map { t0 + 3 + Double($0) * 8 }
    var starts: [Double] = [], ends: [Double] = [], detect: [Double] = [], maxScore = 0.0
    let total = Int(seconds * Double(fps))
    let began = Clock.monotonic()
    for i in 0..<total {
        let t = t0 + Double(i) / Double(fps)
        if let next = entries.last(where: { $0 <= t + 0.5 }), camera.staging.current().walker?.startsAt != next {
            camera.staging.walker = SceneWalker(startsAt: next, duration: 3, size: 0.5)
        }
        source.frame(sequence: firstFrame + UInt64(i), timestamp: t) { frame in
            let a = Clock.monotonic()
            let o = detector.observe(frame.bytes, stride: frame.stride, xstep: 2, width: width, height: height, mask: nil)
            detect.append(Clock.monotonic() - a)
            maxScore = max(maxScore, o.score)
            let moving = !o.learning && !o.lightSwitch && o.score >= settings.threshold
            switch tracker.update(time: t, moving: moving, score: o.score) {
            case .started(let at): starts.append(at)
            case .ended(let e): ends.append(e.end)
            case nil: break
            }
        }
    }
    let elapsed = Clock.monotonic() - began
    // Each walker's event: the first start at or after its entry, before the next walker.
    var delays: [Double] = [], seen = 0
    for (k, entry) in entries.enumerated() {
        let until = k + 1 < entries.count ? entries[k + 1] : .infinity
        if let s = starts.first(where: { $0 >= entry - 0.05 && $0 < until }) { seen += 1; delays.append(s - entry) }
    }
    let unexplained = starts.filter { s in !entries.contains { s >= $0 - 0.05 && s < $0 + 3.5 } }.count
    detect.sort()
    func ms(_ v: Double) -> String { String(format: "%.4f", v * 1000) }
    print(#"{"width": \#(width), "height": \#(height), "iso": \#(iso), "frames": \#(total), "firstFrame": \#(firstFrame), "events": \#(starts.count), "falseEvents": \#(unexplained), "walkers": \#(walkers), "walkersSeen": \#(seen), "delays": [\#(delays.map { String(format: "%.3f", $0) }.joined(separator: ", "))], "maxScore": \#(String(format: "%.3f", maxScore)), "detectMedianMs": \#(ms(detect[detect.count / 2])), "detectP99Ms": \#(ms(detect[detect.count * 99 / 100])), "detectMeanMs": \#(ms(detect.reduce(0, +) / Double(detect.count))), "busyCells": \#(detector.busyCells), "cells": \#(detector.cells), "seconds": \#(String(format: "%.1f", elapsed))}"#)
    return 0
}
