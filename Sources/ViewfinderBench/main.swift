// viewfinder-bench: times the frame path's encode step on a raw YUYV file, as `make bench`
// uses it. Prints one JSON object: median and p90 milliseconds per frame.
//
//   viewfinder-bench encode FILE.yuyv WIDTH HEIGHT [QUALITY] [FRAMES] [OUT.jpg]
//   (VIEWFINDER_SUBSAMPLING=420 in the environment: the stream.subsampling "420" path)
//   viewfinder-bench codecs WIDTH HEIGHT FRAMES ISO OUTDIR QUALITIES CRFS   (Codecs.swift)
//   viewfinder-bench motion WIDTH HEIGHT SECONDS ISO WALKERS [FIRST_FRAME]   (MotionBench.swift)
//   viewfinder-bench audio FILE.s16 aac|opus   (AudioBench.swift)

import CameraCore
import Foundation
import JPEG
import SystemSupport

let args = CommandLine.arguments
if args.count > 1 && args[1] == "codecs" { exit(runCodecs(args)) }
if args.count > 1 && args[1] == "motion" { exit(runMotion(args)) }
if args.count > 1 && args[1] == "audio" { exit(runAudio(args)) }
guard args.count >= 5, args[1] == "encode", let width = Int(args[3]), let height = Int(args[4]),
      let data = try? Sys.readFile(args[2]), data.count >= width * height * 2 else {
    FileHandle.standardError.write(Data("usage: viewfinder-bench encode FILE.yuyv WIDTH HEIGHT [QUALITY] [FRAMES]\n".utf8))
    exit(2)
}
let quality = args.count > 5 ? Int(args[5]) ?? 80 : 80
let frames = args.count > 6 ? Int(args[6]) ?? 200 : 200
let frame = Array(data.prefix(width * height * 2))
let encoder = try JPEGEncoder()
if ProcessInfo.processInfo.environment["VIEWFINDER_SUBSAMPLING"] == "420" { encoder.subsampling = .s420 }
var times: [Double] = []
var last: [UInt8] = []
for i in 0..<(frames + 10) {
    let start = Clock.monotonic()
    let jpeg = try frame.withUnsafeBytes {
        try encoder.encodeYUYV($0, width: width, height: height, stride: width * 2, quality: quality)
    }
    let elapsed = Clock.monotonic() - start
    if i >= 10 { times.append(elapsed * 1000); last = jpeg }  // the first ten warm up
}
times.sort()
let median = times[times.count / 2], p90 = times[times.count * 9 / 10]
print(#"{"width": \#(width), "height": \#(height), "quality": \#(quality), "frames": \#(frames), "medianMs": \#(median), "p90Ms": \#(p90), "jpegBytes": \#(last.count), "subsampling": "\#(encoder.subsampling.rawValue)"}"#)
if args.count > 7 { try AtomicFile.write(last, to: args[7], mode: 0o644) }
