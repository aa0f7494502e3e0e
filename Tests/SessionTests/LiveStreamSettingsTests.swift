// What a live stream is made of (issue 38): the sub stream's size from the camera's aspect
// (never larger than the camera), its rate, the default caps against what IP cameras ship,
// and the sub output taking every other frame of a 30 fps camera — on capture times, so a
// late frame or a pause in the camera does not shift its cadence.

import CameraCore
import Logging
import Movie
@testable import Session
import Testing

@Suite struct LiveStreamSettingsTests {
    @Test func theSubStreamKeepsTheCamerasAspectAndIsNeverLarger() {
        let sub = LiveEncoderSettings.sub
        #expect(sub.size(ofCamera: 1920, 1080) == (640, 360))
        #expect(sub.size(ofCamera: 1280, 720) == (640, 360))
        #expect(sub.size(ofCamera: 640, 480) == (640, 480))
        #expect(sub.size(ofCamera: 352, 288) == (352, 288), "a camera smaller than the sub stream: its own size")
        #expect(sub.size(ofCamera: 1600, 1200) == (640, 480))
        var h = LiveEncoderSettings(height: 240)
        #expect(h.size(ofCamera: 1280, 720) == (426, 240), "from the height: the width follows (even)")
        h.width = 320
        #expect(h.size(ofCamera: 1280, 720) == (320, 240), "both given: that size")
        #expect(LiveEncoderSettings(width: 4000).size(ofCamera: 1280, 720) == (1280, 720), "never larger than the camera")
        #expect(LiveEncoderSettings().size(ofCamera: 641, 481) == (640, 480), "the main stream: the camera's, cut to even")
        #expect(sub.rate(ofCamera: 30) == 15 && sub.rate(ofCamera: 10) == 10 && LiveEncoderSettings().rate(ofCamera: 60) == 60)
    }

    /// Found with Home Assistant: a 640x480 camera's sub stream was 640x480 too, so HA enabled
    /// both profiles and showed the camera twice. Under its main stream, the sub stream is at
    /// most half the main's width and height, whatever was configured.
    @Test func theSubStreamIsAtMostHalfTheMainStream() {
        let sub = LiveEncoderSettings.sub.under(LiveEncoderSettings())
        #expect(sub.size(ofCamera: 640, 480) == (320, 240))
        #expect(sub.size(ofCamera: 1280, 720) == (640, 360), "a 720p camera: the sub stream as before")
        #expect(sub.size(ofCamera: 1920, 1080) == (640, 360))
        #expect(sub.size(ofCamera: 1600, 1200) == (640, 480))
        #expect(sub.size(ofCamera: 352, 288) == (176, 144))
        #expect(sub.size(ofCamera: 641, 481) == (320, 240), "half the main stream's even size")
        var big = LiveEncoderSettings(width: 1280).under(LiveEncoderSettings())
        #expect(big.size(ofCamera: 1280, 720) == (640, 360), "a configured sub stream as large as the main: cut to half")
        big.height = 720
        #expect(big.size(ofCamera: 640, 480) == (320, 180), "both given: their aspect, within half the main")
        #expect(LiveEncoderSettings.sub.under(LiveEncoderSettings(width: 800)).size(ofCamera: 1920, 1080) == (400, 224),
                "under a smaller main stream: half of that")
        #expect(sub.rate(ofCamera: 30) == 15 && sub.cap(width: 320, height: 240, fps: 15) == 500)
    }

    @Test func defaultCapsAreWhatIPCamerasShip() {
        #expect(LiveEncoderSettings.defaultBitrate(width: 1920, height: 1080, fps: 30) == 4000)
        #expect(LiveEncoderSettings.defaultBitrate(width: 1280, height: 720, fps: 30) == 2200)
        #expect(LiveEncoderSettings.defaultBitrate(width: 640, height: 360, fps: 15) == 500)
        #expect(LiveEncoderSettings.defaultBitrate(width: 3840, height: 2160, fps: 30) == 11300)
        #expect(LiveEncoderSettings.defaultBitrate(width: 160, height: 120, fps: 5) == 200, "never below 200")
        #expect(LiveEncoderSettings(bitrate: 900).cap(width: 1920, height: 1080, fps: 30) == 900, "a configured cap wins")
    }

    /// A 30 fps camera's frames, some late by up to a third of an interval, then a pause of a
    /// second: the 15 fps output takes every other one, and after the pause starts again at once.
    @Test func theSubOutputTakesFramesAtItsOwnRate() {
        let output = LiveOutput(.sub, hub: LiveHub(), settings: .sub, encoders: .software, pool: EncodePool(threads: 1, name: "sub-test"),
                                logger: Logger(label: "test"))
        let client = LiveStreamSubscription(hub: output.hub, kind: "mp4")
        client.attach {}
        let format = VideoFormat(pixelFormat: .yuyv, width: 16, height: 8, fps: 30)
        let bytes = [UInt8](repeating: 0, count: 16 * 8 * 2)
        func offered(_ t: Double) -> Bool {
            bytes.withUnsafeBytes { b in output.wants(RawFrame(format: format, bytes: b, stride: 32, sequence: 0, timestamp: t), now: 0) }
        }
        let jitter = [0, 0.01, -0.005, 0.011, 0]
        let times = (0..<30).map { 100 + Double($0) / 30 + jitter[$0 % jitter.count] }
        let taken = times.filter(offered)
        #expect(taken.count == 15, "15 of 30 frames: \(taken.count)")
        let afterPause = (0..<4).map { offered(102 + Double($0) / 30) }
        #expect(afterPause == [true, false, true, false], "after a pause: the first frame, then every other one")
        client.cancel()
        #expect(!offered(103), "nobody watches: no frame")
    }
}
