// The metadata output (AVCaptureMetadataOutput's part here): codes found by zbar in the
// live picture. The capture thread hands over a frame only when the worker is idle and the
// rate allows (the newest frame wins; nothing queues); the worker takes its luma, scans it,
// maps what it finds into the picture viewers see (zoom, rotation, mirror), and announces
// the codes in view whenever their set changes.

import CameraCore
import Foundation
import JPEG
import Metadata
import SystemSupport

/// A normalised rectangle of the picture viewers see.
public struct NormalizedRect: Sendable, Equatable, Codable {
    public var x: Double, y: Double, width: Double, height: Double
    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x; self.y = y; self.width = width; self.height = height
    }
    func contains(_ p: NormalizedPoint) -> Bool { p.x >= x && p.x <= x + width && p.y >= y && p.y <= y + height }
}

public struct NormalizedPoint: Sendable, Equatable, Codable {
    public var x: Double, y: Double
}

/// One code in view.
public struct MetadataObject: Sendable, Equatable, Codable {
    public var type: MetadataObjectType
    /// The decoded text, or base64 when the bytes are not UTF-8 (`encoding` says so).
    public var value: String
    public var encoding: String?
    public var bounds: NormalizedRect
    public var corners: [NormalizedPoint]

    init(type: MetadataObjectType, bytes: [UInt8], corners: [NormalizedPoint]) {
        self.type = type
        if let text = String(validating: bytes, as: UTF8.self) {
            value = text
        } else {
            value = Data(bytes).base64EncodedString()
            encoding = "base64"
        }
        self.corners = corners
        let xs = corners.map(\.x), ys = corners.map(\.y)
        let (x0, y0) = (xs.min() ?? 0, ys.min() ?? 0)
        func r(_ v: Double) -> Double { (v * 10000).rounded() / 10000 }  // as the corners: 0.1 ‰ of the picture
        bounds = NormalizedRect(x: r(x0), y: r(y0), width: r((xs.max() ?? 0) - x0), height: r((ys.max() ?? 0) - y0))
    }

    var key: String { type.rawValue + "\u{0}" + value }
}

/// What `metadata` events carry.
public struct MetadataEvent: Sendable, Equatable, Codable {
    public var camera: String
    public var frameSequence: UInt64
    public var timestamp: Double
    public var objects: [MetadataObject]
}

/// The state's `metadata`.
public struct MetadataState: Sendable, Equatable, Codable {
    public var types: [MetadataObjectType]
    public var rectOfInterest: NormalizedRect?
    public var objects: [MetadataObject]

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(types, forKey: .types)
        try c.encode(rectOfInterest, forKey: .rectOfInterest)
        try c.encode(objects, forKey: .objects)
    }
}

public final class MetadataOutput: Sendable {
    /// Frames wider than this are scanned at half size (and halved again): codes big enough
    /// to see in a preview stay big enough to read.
    static let maxScanWidth = 1280

    private struct Pending {
        var bytes: [UInt8]
        var count: Int
        var format: VideoFormat
        var stride: Int
        var sequence: UInt64
        var timestamp: Double
        var transform: FrameTransform
    }

    private struct Shared {
        var types: Set<MetadataObjectType> = []
        var rect: NormalizedRect?
        var camera: String
        var workerRunning = false
        var busy = false
        /// When the next frame is due (monotonic seconds): a grid at the rate, so frames a little
        /// early or late (capture jitter) keep the rate rather than slip a frame each time.
        var nextDue = 0.0
        var pending: Pending?
        var spare: [UInt8] = []
        var objects: [MetadataObject] = []
        var keys: [String] = []
        var scans: UInt64 = 0
        /// Bumped by every configure: a scan begun under an older one is not announced.
        var generation = 0
    }

    private let shared: Locked<Shared>
    private let wake = DispatchSemaphore(value: 0)
    private let interval: Double
    private let announce: @Sendable (MetadataEvent) -> Void

    /// `rate`: scans a second at most. `announce` is called from the worker.
    init(camera: String, rate: Double, announce: @escaping @Sendable (MetadataEvent) -> Void) {
        shared = Locked(Shared(camera: camera))
        interval = 1 / max(0.1, rate)
        self.announce = announce
    }

    var state: MetadataState {
        shared.withLock { MetadataState(types: $0.types.sorted(), rectOfInterest: $0.rect, objects: $0.objects) }
    }

    var scans: UInt64 { shared.withLock { $0.scans } }

    func setCamera(_ id: String) { shared.withLock { $0.camera = id } }

    /// New types and region; empty types turn detection off (the worker ends). What was in
    /// view is forgotten: the next scan announces afresh.
    func configure(types: Set<MetadataObjectType>, rect: NormalizedRect?) {
        let start = shared.withLock { s -> Bool in
            s.types = types
            s.rect = rect
            s.objects = []
            s.keys = []
            s.generation += 1
            s.nextDue = 0
            if let waiting = s.pending {  // taken under the old settings: not scanned
                s.pending = nil
                s.busy = false
                s.spare = waiting.bytes
            }
            guard !types.isEmpty, !s.workerRunning else { return false }
            s.workerRunning = true
            return true
        }
        if start {
            let t = Thread { [self] in ThreadName.set("metadata"); work() }
            t.name = "viewfinder.metadata"
            t.start()
        } else {
            wake.signal()  // a running worker looks again (and ends when turned off)
        }
    }

    /// The camera stopped: nothing is in view any more.
    func cameraStopped() { shared.withLock { $0.objects = []; $0.keys = [] } }

    /// The capture thread's side: takes the frame when the worker is free and due.
    func offer(_ frame: borrowing RawFrame, transform: @autoclosure () -> FrameTransform) {
        let now = Clock.monotonic()
        let spare = shared.withLock { s -> [UInt8]?? in
            guard !s.types.isEmpty, !s.busy, now >= s.nextDue - interval / 4 else { return nil }
            s.busy = true
            s.nextDue = max(s.nextDue + interval, now + interval / 2)  // after a stall: no burst
            defer { s.spare = [] }
            return .some(s.spare)
        }
        guard case .some(let reused) = spare else { return }
        let n = frame.bytes.count
        var buffer = reused ?? []
        if buffer.count < n { buffer = [UInt8](repeating: 0, count: n) }
        buffer.withUnsafeMutableBytes { $0.copyMemory(from: frame.bytes) }
        let p = Pending(bytes: buffer, count: n, format: frame.format, stride: frame.stride, sequence: frame.sequence,
                        timestamp: frame.timestamp, transform: transform())
        shared.withLock { $0.pending = p }
        wake.signal()
    }

    // MARK: - The worker

    private func work() {
        let scanner = CodeScanner()
        let luma = try? LumaDecoder()
        while true {
            wake.wait()
            let next = shared.withLock { s -> (Pending, Set<MetadataObjectType>, NormalizedRect?, Int)?? in
                if s.types.isEmpty { s.workerRunning = false; s.busy = false; s.pending = nil; return nil }  // off: end
                guard let p = s.pending else { return .some(nil) }
                s.pending = nil
                return .some((p, s.types, s.rect, s.generation))
            }
            guard case .some(let job) = next else { return }
            guard let (p, types, rect, generation) = job else { continue }
            let objects = p.bytes.withUnsafeBytes { b in
                scan(UnsafeRawBufferPointer(rebasing: b[..<p.count]), p, types: types, rect: rect, scanner: scanner, luma: luma)
            }
            let event = shared.withLock { s -> MetadataEvent? in
                s.busy = false
                s.spare = p.bytes
                guard s.generation == generation, !s.types.isEmpty else { return nil }
                s.scans += 1
                s.objects = objects
                let keys = objects.map(\.key).sorted()
                guard keys != s.keys else { return nil }
                s.keys = keys
                return MetadataEvent(camera: s.camera, frameSequence: p.sequence, timestamp: p.timestamp, objects: objects)
            }
            if let event { announce(event) }
        }
    }

    private func scan(_ bytes: UnsafeRawBufferPointer, _ p: Pending, types: Set<MetadataObjectType>, rect: NormalizedRect?,
                      scanner: CodeScanner, luma: LumaDecoder?) -> [MetadataObject] {
        let found: (codes: [DetectedCode], width: Int, height: Int)
        if p.format.pixelFormat == .mjpeg {
            guard let luma, let r = try? luma.decode(bytes, maxWidth: Self.maxScanWidth, { plane, w, h in
                (scanner.scan(plane, width: w, height: h, stride: w, types: types), w, h)
            }) else { return [] }
            found = r
        } else {
            guard let (plane, w, h) = Self.lumaPlane(bytes, p.format, stride: p.stride) else { return [] }
            found = (plane.withUnsafeBytes { scanner.scan($0, width: w, height: h, stride: w, types: types) }, w, h)
        }
        return found.codes.compactMap { code in
            let corners = code.corners.map { c -> NormalizedPoint in
                // zbar's points are pixel positions; a pixel's centre is half a pixel in.
                let v = p.transform.viewPoint(x: (c.x + 0.5) / Double(found.width), y: (c.y + 0.5) / Double(found.height))
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
