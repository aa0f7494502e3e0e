// Turns the `cameras` configuration into devices.

import CameraCore
import Capture
import Foundation
import Logging
import Sound

enum CameraFactory {
    static func make(_ cameras: Configuration.Cameras, logger: Logger) -> [any CaptureDevice] {
        switch cameras {
        case .synthetic:
            return syntheticPair()
        case .auto:
            // Every V4L2 node that can capture and every libcamera camera but a USB one (a
            // webcam stays a V4L2 camera: its controls are all there, libcamera's uvcvideo
            // handler maps fewer); the simulator's pair only when there is none. V4L2 ids come
            // from the camera's identity (USB ids and serial, else bus_info), never from the
            // node number, which changes when a camera is replugged; libcamera's are its own.
            let nodes = V4L2Discovery.captureNodes().filter { !$0.isLibcameraStage }
            let libcamera = libcameraCameras(logger: logger)
            if nodes.isEmpty && libcamera.isEmpty { return syntheticPair() }
            var used = Set(libcamera.map(\.descriptor.id))
            let identities = nodes.map { V4L2Identity.identify(node: $0.path)?.id }
            return libcamera + zip(nodes, identities).map { node, identity -> any CaptureDevice in
                var id = identity ?? (node.path as NSString).lastPathComponent
                // a driver may give several capture nodes one bus_info: keep ids unique
                if !used.insert(id).inserted {
                    id += "-" + (node.path as NSString).lastPathComponent
                    used.insert(id)
                }
                logger.info("camera \(id): \(node.name) (\(node.bus)), \(node.formats.count) formats")
                return V4L2Camera(id: id, path: node.path, name: node.name, position: .external, formats: node.formats,
                                  locate: locator(finding(identity, among: identities)))
            }
        case .list(let entries):
            return entries.compactMap { e -> (any CaptureDevice)? in
                let position = CameraDescriptor.Position(rawValue: e.position ?? "") ?? .unspecified
                switch e.source {
                case .synthetic: return SyntheticCamera(id: e.id, position: position)
                case .image: return ImageCamera(id: e.id, path: e.path!, position: position)
                case .libcamera:
                    guard case .success(let manager) = LibcameraManager.shared else {
                        logger.error("camera \(e.id): libcamera could not start its camera manager")
                        return nil
                    }
                    let known = manager.cameras().map(\.id)
                    guard known.contains(e.device!) else {
                        logger.error("camera \(e.id): libcamera has no camera '\(e.device!)' (it has \(known.isEmpty ? "none" : known.joined(separator: ", "))); left out")
                        return nil
                    }
                    return LibcameraCamera(id: e.id, camera: e.device!, manager: manager,
                                           position: e.position.flatMap { CameraDescriptor.Position(rawValue: $0) })
                case .v4l2:
                    // `device` may be a /dev/v4l/by-id name: its identity is the node's it points at.
                    let node = URL(fileURLWithPath: e.device!).resolvingSymlinksInPath().path
                    let identity = V4L2Identity.identify(node: node)?.id
                    let identities = identity == nil ? [] : V4L2Discovery.captureNodes().map { V4L2Identity.identify(node: $0.path)?.id }
                    let camera = V4L2Camera(id: e.id, path: e.device!, position: e.position == nil ? .external : position,
                                            torchLED: e.torchLED.map { LEDTorch(name: $0) },
                                            locate: locator(finding(identity, among: identities)))
                    // Not there at start (unplugged, another node): left out, as a libcamera camera
                    // that is not there is; its saved settings are kept for when it is.
                    guard !camera.formats.isEmpty else {
                        logger.error("camera \(e.id): \(e.device!) offers no format: it is not there (unplugged?) or not a camera; left out")
                        return nil
                    }
                    return camera
                }
            }
        }
    }

    /// libcamera's cameras but its USB ones (ids ending in the USB vendor:product), each under
    /// an id made from libcamera's (a name a URL and a config can carry: "platform-vimc.0-sensor-b").
    static func libcameraCameras(logger: Logger) -> [any CaptureDevice] {
        guard LibcameraManager.mediaBeyondWebcams(), case .success(let manager) = LibcameraManager.shared else { return [] }
        return manager.cameras().filter { $0.id.range(of: #"-[0-9a-f]{4}:[0-9a-f]{4}$"#, options: .regularExpression) == nil }.map { info in
            let id = LibcameraCamera.identifier(info.id)
            logger.info("camera \(id): libcamera \(info.id) (\(info.model))")
            return LibcameraCamera(id: id, camera: info.id, manager: manager)
        }
    }

    /// Where the camera with this identity is now: a replugged camera may come back under
    /// another /dev/videoN (its old node still held) or on another USB port.
    /// The identity that finds a node again after a replug, nil when another capture node has
    /// it too (vimc's nodes, a capture card's inputs share one bus_info): the locator would find
    /// the device's first capture node, not this one, so the configured path names it.
    static func finding(_ identity: String?, among identities: [String?]) -> String? {
        identities.filter { $0 == identity }.count > 1 ? nil : identity
    }

    static func locator(_ identity: String?) -> (@Sendable () -> String?)? {
        // A bare node name is no identity: it is the number that changes.
        guard let identity, !(identity.hasPrefix("video") && Int(identity.dropFirst(5)) != nil) else { return nil }
        return { V4L2Identity.currentNode(for: identity) }
    }

    /// Each camera's microphone, by camera id: `cameras[].audio`, else the default for the
    /// camera's kind (a V4L2 camera's own sound card, the synthetic microphone for a
    /// synthetic camera unless `synthetic.microphone` is off, none for a still image).
    static func microphones(_ devices: [any CaptureDevice], _ configuration: Configuration) -> [String: any AudioDevice] {
        var entries: [String: Configuration.CameraEntry] = [:]
        if case .list(let list) = configuration.cameras { for e in list { entries[e.id] = e } }
        var out: [String: any AudioDevice] = [:]
        for device in devices {
            let id = device.descriptor.id
            var source = entries[id]?.audio ?? .defaultMicrophone(for: Configuration.CameraEntry.Source(rawValue: device.descriptor.kind.rawValue))
            if entries[id]?.audio == nil && source == .synthetic && !configuration.synthetic.microphone { source = .none }
            switch source {
            case .none: continue
            case .synthetic: out[id] = SyntheticMicrophone()
            case .pcm(let name): out[id] = ALSAMicrophone(pcm: name)
            case .auto:
                guard let camera = device as? V4L2Camera else { continue }
                // Looked up at every start: a replugged webcam's card comes back under another number.
                out[id] = ALSAMicrophone(auto: { SoundCards.microphone(forVideoNode: camera.path) })
            }
        }
        return out
    }

    /// Each camera's talk-back speaker, by camera id: `cameras[].speaker`, else the synthetic
    /// speaker for a synthetic camera (a test hears what a talker said) and none otherwise.
    static func speakers(_ devices: [any CaptureDevice], _ configuration: Configuration) -> [String: any SpeakerDevice] {
        var entries: [String: Configuration.CameraEntry] = [:]
        if case .list(let list) = configuration.cameras { for e in list { entries[e.id] = e } }
        var out: [String: any SpeakerDevice] = [:]
        for device in devices {
            let id = device.descriptor.id
            let synthetic = device.descriptor.kind.rawValue == Configuration.CameraEntry.Source.synthetic.rawValue
            switch entries[id]?.speaker ?? (synthetic ? .synthetic : .none) {
            case .none, .auto: continue
            case .synthetic: out[id] = SyntheticSpeaker()
            case .pcm(let name): out[id] = ALSASpeaker(pcm: name)
            }
        }
        return out
    }

    static func syntheticPair() -> [any CaptureDevice] {
        [SyntheticCamera(id: "rear", position: .rear), SyntheticCamera(id: "front", position: .front)]
    }
}
