// The movie recorder's lane's own things (MovieRecorder; one slot, so one frame at a time):
// the writer and what feeds it — the converter and libx264 for H.264, the JPEG encoder for a raw camera's MJPEG movie, or
// nothing for a shared live stream's access units, which go into the file as they are.

import CameraCore
import CFFmpeg
import Foundation
import JPEG

/// The recorder lane's own things: the writer, the converter and the JPEG encoder.
/// Created on the session's queue, then used by the lane's one slot alone (whichever pool
/// thread serves a frame holds it; the lane's lock hands it from one to the next).
final class RecorderWork: @unchecked Sendable {
    let writer: FragmentedMP4Writer
    let format: VideoFormat
    let orientation: FrameTransform
    let jpegQuality: Int
    private var converter: PictureConverter?
    private let jpeg = FrameEncoder()
    private var firstTimestamp: Double?
    private var lastPts: Int64 = -1
    private var largestFrame: Int64 = 0
    /// Whether the frames' pixels are turned here (a raw camera's JPEGs) or by the player.
    private let turnsPixels: Bool
    /// The frames are a shared stream's access units, encoded and turned already.
    private let encoded: Bool

    init(_ setup: MovieRecorder.Setup, path: String) throws(MovieError) {
        format = setup.format
        orientation = setup.orientation
        jpegQuality = setup.jpegQuality
        let codec = setup.options.codec
        encoded = setup.encoded != nil
        turnsPixels = codec == .mjpeg && setup.format.pixelFormat != .mjpeg
        var width = setup.format.width, height = setup.format.height
        if let e = setup.encoded {
            (width, height) = (e.width, e.height)
        } else if turnsPixels {
            (width, height) = orientation.outputSize(width: width, height: height)
        } else if codec == .h264 {
            (width, height) = (width & ~1, height & ~1)
            converter = try PictureConverter(width: width, height: height)
        }
        let fps = setup.options.timelapse?.fps ?? Double(max(1, setup.format.fps))
        writer = try FragmentedMP4Writer(.init(
            path: path, width: width, height: height, codec: codec, fps: fps, preset: setup.preset,
            rotation: turnsPixels || encoded ? 0 : orientation.rotation, mirrored: turnsPixels || encoded ? false : orientation.mirrored,
            fragmentEveryFrame: setup.options.timelapse != nil, extradata: setup.encoded?.extradata,
            audio: setup.options.timelapse == nil ? setup.audio : nil))
    }

    var hasAudio: Bool { writer.setup.audio != nil }

    /// The capture time the picture ends at (its first frame's plus its length).
    var videoEnd: Double? {
        firstTimestamp.map { $0 + Double(writer.endTicks) / Double(FragmentedMP4Writer.ticksPerSecond) }
    }

    /// Writes sound packets at their capture time on the movie's clock (the first frame is
    /// 0): those from before the first frame, or not `before` the given time, are left out.
    func write(audio packets: [AudioPacket], before end: Double? = nil) -> (reason: RecordingEndReason, message: String?)? {
        guard let rate = writer.setup.audio?.sampleRate, let first = firstTimestamp else { return nil }
        do throws(MovieError) {
            for p in packets where p.time >= first && (end.map { p.time < $0 } ?? true) {
                try writer.write(audio: p, pts: Int64(((p.time - first) * Double(rate)).rounded()))
            }
        } catch {
            return (error.isStorageFull ? .diskFull : .failed, error.description)
        }
        return nil
    }

    /// Writes one frame; answers why the recording must end now, if it must.
    func write(_ bytes: UnsafeRawBufferPointer, stride: Int, timestamp: Double, zoom: Double, center: Point = .center, keyframe: Bool,
               options: RecordingOptions) -> (reason: RecordingEndReason, message: String?)? {
        let tps = FragmentedMP4Writer.ticksPerSecond
        var pts: Int64
        if options.timelapse != nil {
            pts = Int64(writer.frames) * writer.frameTicks
        } else {
            let first = firstTimestamp ?? timestamp
            firstTimestamp = first
            pts = Int64(((timestamp - first) * Double(tps)).rounded())
        }
        pts = max(pts, lastPts + 1)  // a clock step back never reorders the movie
        if let max = options.maxDuration, Double(pts + writer.frameTicks) > max * Double(tps) + Double(writer.frameTicks) / 2 {
            return (.maxDuration, nil)
        }
        let before = writer.bytes
        do throws(MovieError) {
            switch writer.setup.codec {
            case .h264 where encoded:
                try writer.write(unit: bytes, pts: pts, keyframe: keyframe)
            case .h264:
                let picture = try converter!.convert(bytes, format: format, stride: stride, zoom: zoom, center: center)
                try writer.encode(picture, pts: pts)
            case .mjpeg where !turnsPixels:
                try writer.write(jpeg: bytes, pts: pts)  // the camera's JPEG, untouched
            case .mjpeg:
                var transform = orientation
                transform.zoom = zoom
                transform.center = center
                let frame = RawFrame(format: format, bytes: bytes, stride: stride, sequence: 0, timestamp: timestamp)
                let image: EncodedImage
                do throws(JPEGError) { image = try jpeg.encode(frame, quality: jpegQuality, transform: transform) } catch {
                    throw MovieError.unsupported("JPEG encode failed: \(error)")
                }
                let written = image.jpeg.withUnsafeBytes { b in Result { () throws(MovieError) in try writer.write(jpeg: b, pts: pts) } }
                try written.get()
            }
        } catch {
            return (error.isStorageFull ? .diskFull : .failed, error.description)
        }
        lastPts = pts
        largestFrame = max(largestFrame, writer.bytes - before)
        if options.maxDuration.map({ Double(writer.endTicks) >= $0 * Double(tps) - Double(writer.frameTicks) / 2 }) == true {
            return (.maxDuration, nil)
        }
        // Stop before the file could pass maxBytes: room for two more frames, the last
        // fragment's header and the index written at the end.
        if let max = options.maxBytes, writer.bytes + 2 * largestFrame + 16 * 1024 >= max {
            return (.maxBytes, nil)
        }
        return nil
    }
}
