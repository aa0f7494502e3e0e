// The metadata output on the session: which codes to look for and where. The settings
// outlive starts, stops and format changes (as AVCaptureMetadataOutput's do); only the
// codes in view are forgotten when the camera stops.

import CameraCore

extension CaptureSession {
    @discardableResult
    public func setMetadata(types: [String], rectOfInterest: NormalizedRect?) throws(SessionError) -> SessionState {
        let available = camera.capabilities.metadata.availableTypes
        var chosen: Set<MetadataObjectType> = []
        for name in types {
            guard let t = MetadataObjectType(rawValue: name), available.contains(t) else {
                throw .unsupported("metadata type '\(name)'", supported: available.map(\.rawValue))
            }
            chosen.insert(t)
        }
        var rect = rectOfInterest
        if let r = rectOfInterest {
            // Its corner on the picture and a size; a rectangle reaching past the edge is cut at
            // it (the state shows the cut one), as a drag that overshoots the picture means.
            guard [r.x, r.y].allSatisfy({ $0.isFinite && $0 >= 0 && $0 < 1 }),
                  [r.width, r.height].allSatisfy({ $0.isFinite && $0 > 0 && $0 <= 1 }) else {
                throw .invalidValue("rectOfInterest: x and y are within 0…1 (1 excluded), width and height above 0 and at most 1")
            }
            rect = NormalizedRect(x: r.x, y: r.y, width: min(r.width, 1 - r.x), height: min(r.height, 1 - r.y))
        }
        metadata.configure(types: chosen, rect: rect)
        return announce()
    }

    /// Frames the metadata output has scanned (for /metrics).
    public nonisolated var metadataScans: UInt64 { metadata.scans }
}
