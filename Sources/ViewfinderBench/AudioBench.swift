// `viewfinder-bench audio FILE.s16 CODEC`: the server's sound encode (Movie's AudioEncoder,
// FFmpeg's `aac` or libopus as the session configures them) on 48 kHz mono 16-bit samples,
// fed in the microphone's 10 ms buffers. Prints JSON: the seconds of sound, the packets and
// bytes out, and the process's CPU seconds (user + system) spent encoding, file read excluded.

import Foundation
import Glibc
import Movie
import SystemSupport

func runAudio(_ args: [String]) -> Int32 {
    guard args.count >= 4, let data = try? Sys.readFile(args[2]),
          let codec = AudioTrackInfo.Codec(rawValue: args[3]) else {
        FileHandle.standardError.write(Data("usage: viewfinder-bench audio FILE.s16 aac|opus\n".utf8))
        return 2
    }
    let samples = data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    let period = 480  // the microphone's 10 ms
    func cpu() -> Double {
        var u = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &u)
        return Double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + Double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6
    }
    do {
        let encoder = try AudioEncoder(codec, sampleRate: 48_000, channels: 1, anchor: 0)
        var packets = 0, bytes = 0
        let before = cpu()
        try samples.withUnsafeBufferPointer { all throws(MovieError) in
            var i = 0
            while i < all.count {
                let n = min(period, all.count - i)
                for p in try encoder.encode(UnsafeBufferPointer(rebasing: all[i..<(i + n)])) { packets += 1; bytes += p.bytes.count }
                i += n
            }
            for p in try encoder.flush() { packets += 1; bytes += p.bytes.count }
        }
        let spent = cpu() - before
        print(#"{"codec": "\#(codec.rawValue)", "seconds": \#(Double(samples.count) / 48_000), "packets": \#(packets), "bytes": \#(bytes), "cpuSeconds": \#(spent)}"#)
        return 0
    } catch {
        FileHandle.standardError.write(Data("viewfinder-bench audio: \(error)\n".utf8))
        return 1
    }
}
