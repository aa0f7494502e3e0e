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
            // Every V4L2 node that can capture; the simulator's pair only when there is none.
            // Ids come from the camera's identity (USB ids and serial, else bus_info), never
            // from the node number, which changes when a camera is replugged.
            let nodes = V4L2Discovery.captureNodes()
            if nodes.isEmpty { return syntheticPair() }
            var used = Set<String>()
            return nodes.map { node in
                let identity = V4L2Identity.identify(node: node.path)?.id
                var id = identity ?? (node.path as NSString).lastPathComponent
                var locate = identity
                // a driver may give several capture nodes one bus_info: keep ids unique
                if !used.insert(id).inserted {
                    id += "-" + (node.path as NSString).lastPathComponent
                    used.insert(id)
                    locate = nil  // the identity names more than this node
                }
                logger.info("camera \(id): \(node.name) (\(node.bus)), \(node.formats.count) formats")
                return V4L2Camera(id: id, path: node.path, name: node.name, position: .external, formats: node.formats,
                                  locate: locator(locate))
            }
        case .list(let entries):
            return entries.compactMap { e -> (any CaptureDevice)? in
                let position = CameraDescriptor.Position(rawValue: e.position ?? "") ?? .unspecified
                switch e.source {
                case .synthetic: return SyntheticCamera(id: e.id, position: position)
                case .image: return ImageCamera(id: e.id, path: e.path!, position: position)
                case .v4l2:
                    // `device` may be a /dev/v4l/by-id name: its identity is the node's it points at.
                    let node = URL(fileURLWithPath: e.device!).resolvingSymlinksInPath().path
                    return V4L2Camera(id: e.id, path: e.device!, position: e.position == nil ? .external : position,
                                      torchLED: e.torchLED.map { LEDTorch(name: $0) },
                                      locate: locator(V4L2Identity.identify(node: node)?.id))
                }
            }
        }
    }

    /// Where the camera with this identity is now: a replugged camera may come back under
    /// another /dev/videoN (its old node still held) or on another USB port.
    static func locator(_ identity: String?) -> (@Sendable () -> String?)? {
        // A bare node name is no identity: it is the number that changes.
        guard let identity, !(identity.hasPrefix("video") && Int(identity.dropFirst(5)) != nil) else { return nil }
        return { V4L2Identity.currentNode(for: identity) }
    }

    static func syntheticPair() -> [any CaptureDevice] {
        [SyntheticCamera(id: "rear", position: .rear), SyntheticCamera(id: "front", position: .front)]
    }
}
