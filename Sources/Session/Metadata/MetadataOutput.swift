// The metadata output (AVCaptureMetadataOutput): codes found by zbar in the live picture.
// It wants a frame only when a scan is due (at most `rate` a second) and its lane is free;
// the thread takes the frame's luma, scans it, maps what it finds into the picture viewers
// see (zoom, rotation, mirror), and announces the codes in view whenever their set changes.
// Its settings outlive the camera's starts and stops; its lane of the pool is open while types are set.

import CameraCore
import Foundation
import JPEG
import Metadata
import SystemSupport

public final class MetadataOutput: CaptureOutput {
    /// Frames wider than this are scanned at half size (and halved again): codes big enough
    /// to see in a preview stay big enough to read.
    static let maxScanWidth = 1280

    struct Job: Sendable {
        var transform: FrameTransform
        var types: Set<MetadataObjectType>
        var rect: NormalizedRect?
        var generation: Int
    }

    private struct Shared {
        var types: Set<MetadataObjectType> = []
        var rect: NormalizedRect?
        var camera: String
        /// When the next frame is due (monotonic seconds): a grid at the rate, so frames a little
        /// early or late (capture jitter) keep the rate rather than slip a frame each time.
        var nextDue = 0.0
        var objects: [MetadataObject] = []
        var keys: [String] = []
        var scans: UInt64 = 0
        /// Bumped by every configure: a scan begun under an older one is not announced.
        var generation = 0
        /// The scanner's lane, while types are set.
        var handoff: FrameHandoff<Job>?
        /// The figures of the lanes that ended (types cleared), for the report.
        var past = HandoffFigures()
    }

    private let shared: Locked<Shared>
    private let interval: Double
    private let pool: EncodePool
    private let announce: @Sendable (MetadataEvent) -> Void

    /// `rate`: scans a second at most. `announce` is called from the scan, on a pool thread.
    init(camera: String, rate: Double, pool: EncodePool, announce: @escaping @Sendable (MetadataEvent) -> Void) {
        self.pool = pool
        shared = Locked(Shared(camera: camera))
        interval = 1 / max(0.1, rate)
        self.announce = announce
    }

    deinit { shared.withLock { $0.handoff?.finish(then: nil) } }

    var state: MetadataState {
        shared.withLock { MetadataState(types: $0.types.sorted(), rectOfInterest: $0.rect, objects: $0.objects) }
    }

    var scans: UInt64 { shared.withLock { $0.scans } }

    public var kind: OutputKind { .metadata }

    public var report: OutputReport {
        shared.withLock { s in
            OutputReport(type: .metadata, active: !s.types.isEmpty, figures: s.handoff.map { s.past + $0.figures } ?? s.past)
        }
    }

    public func runStarted(_ run: CaptureRun) { shared.withLock { $0.camera = run.camera } }

    /// New types and region; empty types turn detection off (the thread ends). What was in
    /// view is forgotten: the next scan announces afresh.
    func configure(types: Set<MetadataObjectType>, rect: NormalizedRect?) {
        let ended = shared.withLock { s -> FrameHandoff<Job>? in
            s.types = types
            s.rect = rect
            s.objects = []
            s.keys = []
            s.generation += 1
            s.nextDue = 0
            if types.isEmpty {
                if let h = s.handoff { s.past = s.past + h.figures }
                defer { s.handoff = nil }
                return s.handoff
            }
            if s.handoff == nil {
                s.handoff = FrameHandoff(name: "\(s.camera)-metadata", policy: .newestWins, pool: pool) { [weak self] in
                    let scanner = CodeScanner()
                    let luma = try? LumaDecoder()
                    return { frame, job in self?.scanned(frame, job, scanner: scanner, luma: luma) }
                }
            }
            return nil
        }
        ended?.finish(then: nil)  // a scan in hand finishes (and is not announced); the thread ends
    }

    /// The camera stopped: nothing is in view any more. (Its lane outlives runs: the scanner
    /// does not depend on the format, and a scan in hand of the last run is announced.)
    public func runEnded() { shared.withLock { $0.objects = []; $0.keys = [] } }

    public func wants(_ frame: borrowing RawFrame, now: Double) -> Bool {
        shared.withLock { s in
            guard !s.types.isEmpty, now >= s.nextDue - interval / 4, let h = s.handoff else { return false }
            return h.isIdle
        }
    }

    public func take(_ frame: borrowing RawFrame, _ context: FrameContext) {
        let now = context.now
        let taken = shared.withLock { s -> (FrameHandoff<Job>, Job)? in
            guard let h = s.handoff else { return nil }
            s.nextDue = max(s.nextDue + interval, now + interval / 2)  // after a stall: no burst
            return (h, Job(transform: context.transform, types: s.types, rect: s.rect, generation: s.generation))
        }
        if let (handoff, job) = taken { handoff.submit(frame, job) }
    }

    // MARK: - The scan (on a pool thread)

    private func scanned(_ frame: borrowing RawFrame, _ job: Job, scanner: CodeScanner, luma: LumaDecoder?) {
        let objects = scan(frame, job, scanner: scanner, luma: luma)
        let (sequence, timestamp) = (frame.sequence, frame.timestamp)
        let event = shared.withLock { s -> MetadataEvent? in
            guard s.generation == job.generation, !s.types.isEmpty else { return nil }
            s.scans += 1
            s.objects = objects
            let keys = objects.map(\.key).sorted()
            guard keys != s.keys else { return nil }
            s.keys = keys
            return MetadataEvent(camera: s.camera, frameSequence: sequence, timestamp: timestamp, objects: objects)
        }
        if let event { announce(event) }
    }

    private func scan(_ frame: borrowing RawFrame, _ job: Job, scanner: CodeScanner, luma: LumaDecoder?) -> [MetadataObject] {
        let (bytes, format, types, rect) = (frame.bytes, frame.format, job.types, job.rect)
        let found: (codes: [DetectedCode], width: Int, height: Int)
        if format.pixelFormat == .mjpeg {
            guard let luma, let r = try? luma.decode(bytes, maxWidth: Self.maxScanWidth, { plane, w, h in
                (scanner.scan(plane, width: w, height: h, stride: w, types: types), w, h)
            }) else { return [] }
            found = r
        } else {
            guard let (plane, w, h) = Self.lumaPlane(bytes, format, stride: frame.stride) else { return [] }
            found = (plane.withUnsafeBytes { scanner.scan($0, width: w, height: h, stride: w, types: types) }, w, h)
        }
        return found.codes.compactMap { code in
            let corners = code.corners.map { c -> NormalizedPoint in
                // zbar's points are pixel positions; a pixel's centre is half a pixel in.
                let v = job.transform.viewPoint(x: (c.x + 0.5) / Double(found.width), y: (c.y + 0.5) / Double(found.height))
                return NormalizedPoint(x: (v.x * 10000).rounded() / 10000, y: (v.y * 10000).rounded() / 10000)
            }
            let object = MetadataObject(type: code.type, bytes: code.value, corners: corners)
            let centre = NormalizedPoint(x: object.bounds.x + object.bounds.width / 2, y: object.bounds.y + object.bounds.height / 2)
            guard (0...1).contains(centre.x), (0...1).contains(centre.y) else { return nil }  // zoomed out of the picture
            if let rect, !rect.contains(centre) { return nil }
            return object
        }
    }

    /// The frame's luma as a packed plane, every other pixel and row when it is wide.
    static func lumaPlane(_ b: UnsafeRawBufferPointer, _ f: VideoFormat, stride: Int) -> (plane: [UInt8], width: Int, height: Int)? {
        let step = f.width > maxScanWidth ? 2 : 1
        let w = f.width / step, h = f.height / step
        guard w > 0, h > 0, b.count >= stride * (f.height - 1) + (f.pixelFormat.bytesPerLine(width: f.width) ?? 0) else { return nil }
        var out = [UInt8](repeating: 0, count: w * h)
        let src = b.bindMemory(to: UInt8.self)
        /// BT.601 studio-range luma from 8-bit RGB.
        func luma(_ r: Int, _ g: Int, _ b: Int) -> UInt8 {
            let sum: Int = 66 * r + 129 * g + 25 * b + 4224
            return UInt8(sum >> 8)
        }
        func each(_ pixel: (Int, Int) -> UInt8) {
            for y in 0..<h { for x in 0..<w { out[y * w + x] = pixel(x * step, y * step) } }
        }
        switch f.pixelFormat {
        case .yuyv, .yvyu: each { x, y in src[y * stride + 2 * x] }
        case .uyvy: each { x, y in src[y * stride + 2 * x + 1] }
        case .nv12, .nv16, .yu12, .grey: each { x, y in src[y * stride + x] }
        case .rgb24, .bgr24:
            let (ri, bi) = f.pixelFormat == .rgb24 ? (0, 2) : (2, 0)
            each { x, y in
                let o = y * stride + 3 * x
                return luma(Int(src[o + ri]), Int(src[o + 1]), Int(src[o + bi]))
            }
        case .rgb565:
            each { x, y in
                let o = y * stride + 2 * x
                let v = Int(src[o]) | Int(src[o + 1]) << 8
                return luma((v >> 11) << 3, ((v >> 5) & 63) << 2, (v & 31) << 3)
            }
        case .mjpeg: return nil
        }
        return (out, w, h)
    }
}
