// Capture → encode → publish for one running camera. Runs on the camera's capture thread;
// encodes each frame once, and only when someone will look at it.

import CameraCore
import Foundation
import JPEG
import Logging

final class FramePipeline: @unchecked Sendable {
    private let hub: FrameHub
    private let settings: StreamSettings
    private let logger: Logger
    private var encoder: JPEGEncoder?
    private let lock = NSLock()
    private var active = true
    private(set) var captured: UInt64 = 0
    private(set) var failures: UInt64 = 0

    init(hub: FrameHub, settings: StreamSettings, logger: Logger) {
        self.hub = hub
        self.settings = settings
        self.logger = logger
    }

    /// After this returns no frame from this pipeline reaches the hub (a switch's old camera).
    func deactivate() { lock.withLock { active = false } }

    func handle(_ frame: borrowing RawFrame) {
        lock.lock()
        defer { lock.unlock() }
        guard active else { return }
        captured += 1
        guard hub.hasDemand else { return }  // nobody watches: don't encode
        do {
            if encoder == nil { encoder = try JPEGEncoder() }
            let jpeg: [UInt8]
            let f = frame.format
            switch f.pixelFormat {
            case .yuyv:
                jpeg = try encoder!.encodeYUYV(frame.bytes, width: f.width, height: f.height,
                                               stride: frame.stride, quality: settings.quality)
            case .grey:
                jpeg = try encoder!.encodeGrey(frame.bytes, width: f.width, height: f.height,
                                               stride: frame.stride, quality: settings.quality)
            case .mjpeg:
                jpeg = Array(frame.bytes)  // already JPEG: pass through untouched
            case .nv12, .rgb24:
                failures += 1
                return
            }
            hub.publish(EncodedFrame(jpeg: jpeg, width: f.width, height: f.height,
                                     sequence: hub.takeSequence(), timestamp: frame.timestamp))
        } catch {
            failures += 1
            if failures == 1 || failures % 100 == 0 { logger.error("encode failed: \(error)") }
        }
    }
}

/// Stream settings read by the capture thread while the session may change them.
public final class StreamSettings: @unchecked Sendable {
    private let lock = NSLock()
    private var _quality: Int

    public init(quality: Int) { _quality = quality }

    public var quality: Int {
        get { lock.withLock { _quality } }
        set { lock.withLock { _quality = newValue } }
    }
}
