// Orientation for the live H.264 (issue 27): turns a YUV 4:2:0 picture clockwise by 90, 180
// or 270 degrees, then mirrors it (flips its columns) — the preview's order (SampleTables,
// tjTransform) — into a picture of its own. RTP and WebRTC carry no display matrix a player
// would honour, so the pixels turn, as the preview's do. One owner: the live output's thread.

import CFFmpeg

final class PictureRotator {
    private var picture: UnsafeMutablePointer<AVFrame>?
    let width: Int
    let height: Int

    /// Pictures of `width`×`height` (the turned size; even numbers).
    init(width: Int, height: Int) throws(MovieError) {
        self.width = width
        self.height = height
        picture = try PictureConverter.picture(width: width, height: height)
    }

    deinit { av_frame_free(&picture) }

    /// `source` (YUV 4:2:0) turned by `rotation` (0, 90, 180, 270) and mirrored. Valid until the next call.
    func turn(_ source: UnsafeMutablePointer<AVFrame>, rotation: Int, mirrored: Bool) throws(MovieError) -> UnsafeMutablePointer<AVFrame> {
        guard let picture else { throw .unsupported("no picture") }
        try MovieError.check(av_frame_make_writable(picture), "av_frame_make_writable")
        let (sw, sh) = (Int(source.pointee.width), Int(source.pointee.height))
        withUnsafeBytes(of: source.pointee.data) { sData in
            withUnsafeBytes(of: source.pointee.linesize) { sLines in
                withUnsafeBytes(of: picture.pointee.data) { dData in
                    withUnsafeBytes(of: picture.pointee.linesize) { dLines in
                        let s = sData.bindMemory(to: UnsafeMutablePointer<UInt8>?.self), sl = sLines.bindMemory(to: Int32.self)
                        let d = dData.bindMemory(to: UnsafeMutablePointer<UInt8>?.self), dl = dLines.bindMemory(to: Int32.self)
                        for plane in 0..<3 {
                            let shift = plane == 0 ? 0 : 1
                            Self.turn(from: s[plane]!, stride: Int(sl[plane]), width: sw >> shift, height: sh >> shift,
                                      to: d[plane]!, stride: Int(dl[plane]), width: width >> shift, height: height >> shift,
                                      rotation: rotation, mirrored: mirrored)
                        }
                    }
                }
            }
        }
        picture.pointee.pts = source.pointee.pts
        return picture
    }

    /// One plane: output (ox, oy) reads the source sample the turn puts there.
    static func turn(from src: UnsafeMutablePointer<UInt8>, stride ss: Int, width sw: Int, height sh: Int,
                     to dst: UnsafeMutablePointer<UInt8>, stride ds: Int, width ow: Int, height oh: Int,
                     rotation: Int, mirrored: Bool) {
        for oy in 0..<oh {
            let row = dst + oy * ds
            for ox in 0..<ow {
                let u = mirrored ? ow - 1 - ox : ox
                let (sx, sy): (Int, Int)
                switch rotation {
                case 90: (sx, sy) = (oy, sh - 1 - u)
                case 180: (sx, sy) = (sw - 1 - u, sh - 1 - oy)
                case 270: (sx, sy) = (sw - 1 - oy, u)
                default: (sx, sy) = (u, oy)
                }
                row[ox] = src[min(sy, sh - 1) * ss + min(sx, sw - 1)]
            }
        }
    }
}
