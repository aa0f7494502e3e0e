// Capture → encode → publish for one running camera. Runs on the camera's capture thread;
// encodes each frame once, and only when someone will look at it: a viewer, a snapshot
// waiting, or a photo capture (encoded at its own quality).

import CameraCore
import Foundation
import JPEG
import Logging

final class FramePipeline: @unchecked Sendable {
    private let hub: FrameHub
    private let settings: PipelineSettings
    private let logger: Logger
    private var encoder: JPEGEncoder?
    private var transformer: JPEGTransformer?
    private let lock = NSLock()
    private var active = true
    private var captures: [CaptureTicket] = []
    private(set) var captured: UInt64 = 0
    private(set) var failures: UInt64 = 0

    init(hub: FrameHub, settings: PipelineSettings, logger: Logger) {
        self.hub = hub
        self.settings = settings
        self.logger = logger
    }

    /// After this returns no frame from this pipeline reaches the hub (a switch's old
    /// camera); captures still waiting fail so their requests answer at once.
    func deactivate() {
        let pending = lock.withLock { () -> [CaptureTicket] in
            active = false
            defer { captures = [] }
            return captures
        }
        for t in pending { t.fulfil(nil) }
    }

    /// A photo from the first frame exposed at or after `requested` (wall-clock seconds).
    func requestCapture(quality: Int, requested: Double) -> CaptureTicket {
        let ticket = CaptureTicket(quality: quality, requested: requested)
        lock.withLock {
            if active { captures.append(ticket) }
        }
        if lock.withLock({ !active }) { ticket.fulfil(nil) }
        return ticket
    }

    func handle(_ frame: borrowing RawFrame) {
        lock.lock()
        defer { lock.unlock() }
        guard active else { return }
        captured += 1
        let due = captures.isEmpty ? [] : captures.filter { frame.timestamp >= $0.requested }  // no allocation per frame
        let preview = hub.hasDemand
        guard preview || !due.isEmpty else { return }  // nobody looks: don't encode
        let sequence = hub.takeSequence()
        let transform = settings.transform(at: Clock.monotonic())
        if !due.isEmpty {
            captures.removeAll { t in due.contains { $0 === t } }
            for ticket in due {
                ticket.fulfil(encode(frame, quality: ticket.quality, transform: transform, sequence: sequence))
            }
        }
        if preview, let f = encode(frame, quality: settings.quality, transform: transform, sequence: sequence) {
            hub.publish(f)
        }
    }

    private func encode(_ frame: borrowing RawFrame, quality: Int, transform: FrameTransform,
                        sequence: UInt64) -> EncodedFrame? {
        do {
            if encoder == nil { encoder = try JPEGEncoder() }
            let f = frame.format
            let jpeg: [UInt8]
            var size = (width: f.width, height: f.height)
            switch f.pixelFormat {
            case .mjpeg where transform.isIdentity:
                jpeg = Array(frame.bytes)  // already JPEG: pass through untouched
            case .mjpeg:
                // Rotation, mirroring and zoom (as an MCU-aligned crop) without re-encoding.
                if transformer == nil { transformer = try JPEGTransformer() }
                let t = try transformer!.apply(frame.bytes, transform)
                return EncodedFrame(jpeg: t.jpeg, width: t.width, height: t.height, sequence: sequence, timestamp: frame.timestamp)
            default:
                // Every raw format; zoom and orientation are applied while it is gathered.
                let image = try encoder!.encode(frame.bytes, format: f.pixelFormat, width: f.width, height: f.height,
                                                stride: frame.stride, quality: quality, transform: transform)
                (jpeg, size) = (image.jpeg, (image.width, image.height))
            }
            return EncodedFrame(jpeg: jpeg, width: size.width, height: size.height,
                                sequence: sequence, timestamp: frame.timestamp)
        } catch {
            failures += 1
            if failures == 1 || failures % 100 == 0 { logger.error("encode failed: \(error)") }
            return nil
        }
    }
}

/// A pending photo: fulfilled once by the capture thread, awaited by the HTTP handler.
public final class CaptureTicket: @unchecked Sendable {
    let quality: Int
    let requested: Double
    private let lock = NSLock()
    private var result: EncodedFrame??
    private var continuation: CheckedContinuation<EncodedFrame?, Never>?

    init(quality: Int, requested: Double) {
        self.quality = quality
        self.requested = requested
    }

    func fulfil(_ frame: EncodedFrame?) {
        let c = lock.withLock { () -> CheckedContinuation<EncodedFrame?, Never>? in
            guard result == nil else { return nil }
            result = .some(frame)
            defer { continuation = nil }
            return continuation
        }
        c?.resume(returning: frame)
    }

    /// The photo, or nil if the camera stopped or `timeout` seconds passed.
    public func frame(timeout: Double) async -> EncodedFrame? {
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [weak self] in self?.fulfil(nil) }
        return await withCheckedContinuation { c in
            let ready = lock.withLock { () -> EncodedFrame?? in
                if let result { return result }
                continuation = c
                return nil
            }
            if let ready { c.resume(returning: ready) }
        }
    }
}

/// What the capture thread reads per frame while the session may change it.
public final class PipelineSettings: @unchecked Sendable {
    private let lock = NSLock()
    private var _quality: Int
    private var _ramp = ZoomRamp.fixed(1)
    private var _rotation = 0
    private var _mirrored = false

    public init(quality: Int) { _quality = quality }

    public var quality: Int {
        get { lock.withLock { _quality } }
        set { lock.withLock { _quality = newValue } }
    }

    public var ramp: ZoomRamp {
        get { lock.withLock { _ramp } }
        set { lock.withLock { _ramp = newValue } }
    }

    public func setOrientation(rotation: Int, mirrored: Bool) {
        lock.withLock { _rotation = rotation; _mirrored = mirrored }
    }

    public func transform(at t: Double) -> FrameTransform {
        lock.withLock { FrameTransform(zoom: _ramp.factor(at: t), rotation: _rotation, mirrored: _mirrored) }
    }
}
