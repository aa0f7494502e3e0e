// Turns the `cameras` configuration into devices.

import CameraCore
import Capture
import Foundation
import Logging

enum CameraFactory {
    static func make(_ cameras: Configuration.Cameras, logger: Logger) -> [any CaptureDevice] {
        switch cameras {
        case .synthetic:
            return syntheticPair()
        case .auto:
            // V4L2 discovery arrives with the V4L2 backend; until then "auto" means the
            // simulator's pair, and says so when real nodes are present.
            let nodes = (try? FileManager.default.contentsOfDirectory(atPath: "/dev"))?
                .filter { $0.hasPrefix("video") } ?? []
            if !nodes.isEmpty {
                logger.warning("found /dev/\(nodes.sorted().joined(separator: ", /dev/")) but V4L2 capture is not built yet; using the synthetic cameras")
            }
            return syntheticPair()
        case .list(let entries):
            return entries.compactMap { e -> (any CaptureDevice)? in
                let position = CameraDescriptor.Position(rawValue: e.position ?? "") ?? .unspecified
                switch e.source {
                case .synthetic: return SyntheticCamera(id: e.id, position: position)
                case .image: return ImageCamera(id: e.id, path: e.path!, position: position)
                case .v4l2:
                    logger.warning("camera \(e.id): V4L2 capture is not built yet; skipped")
                    return nil
                }
            }
        }
    }

    static func syntheticPair() -> [any CaptureDevice] {
        [SyntheticCamera(id: "rear", position: .rear), SyntheticCamera(id: "front", position: .front)]
    }
}
