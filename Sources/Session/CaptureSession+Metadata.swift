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
        if let r = rectOfInterest {
            let inside = [r.x, r.y, r.width, r.height].allSatisfy { $0.isFinite && (0...1).contains($0) }
            guard inside, r.width > 0, r.height > 0, r.x + r.width <= 1.000001, r.y + r.height <= 1.000001 else {
                throw .invalidValue("rectOfInterest: x, y, width and height are within 0…1, the size above 0 and the rectangle inside the picture")
            }
        }
        metadata.configure(types: chosen, rect: rectOfInterest)
        return announce()
    }

    /// Frames the metadata output has scanned (for /metrics).
    public nonisolated var metadataScans: UInt64 { metadata.scans }
}
