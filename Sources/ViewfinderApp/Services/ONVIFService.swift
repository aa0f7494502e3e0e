// The cameras as an ONVIF device (issue 39): its identity, the interface a client reached it
// on, and a media profile per live stream of every camera — the main and the sub H.264
// stream — whose stream URI is the RTSP server's and whose snapshot is the camera's
// /snapshot. Sign-in is the same users as HTTP's, through WS-Security's UsernameToken, counted
// by the same failure limiter.

import Auth
import Foundation
import HTTPServer
import Logging
import ONVIF
import Session
import SystemSupport

struct ONVIFService: ONVIFDevice {
    let cameras: MultiCamSession
    let configuration: Configuration
    /// The RTSP server's bound port, nil when it does not run.
    let rtspPort: @Sendable () -> Int?

    func information() async -> DeviceInformation {
        let main = cameras.main
        let camera = main.cameras[0].descriptor
        return DeviceInformation(manufacturer: "Viewfinder", model: camera.name, firmwareVersion: viewfinderVersion,
                                 serialNumber: "\(hostname())-\(camera.id)", hardwareId: camera.device ?? camera.kind.rawValue)
    }

    func hostname() -> String { (try? Sys.hostname()) ?? "viewfinder" }

    func interfaces(_ context: ONVIFContext) -> [NetworkInterface] {
        let addresses = (try? Sys.ipv4Addresses()) ?? []
        var names: [String] = []
        // The interface the client reached: the one holding the address it used, first.
        if let reached = addresses.first(where: { $0.address == context.hostName }) { names.append(reached.interface) }
        for a in addresses where !names.contains(a.interface) && a.interface != "lo" { names.append(a.interface) }
        if names.isEmpty { names = ["lo"] }
        return names.compactMap { name in
            guard let link = try? Sys.link(name) else { return nil }
            return NetworkInterface(name: name, mac: link.mac, mtu: link.mtu,
                                    ipv4: addresses.filter { $0.interface == name }.map { ($0.address, $0.prefixLength) })
        }
    }

    func profiles(_ context: ONVIFContext) async -> [MediaProfile] {
        var out: [MediaProfile] = []
        let port = rtspPort()
        for session in cameras.sessions {
            let id = session.id
            let state = await session.state()
            for stream in state.live {
                let sub = stream.name == "sub"
                out.append(MediaProfile(
                    token: "\(id)_\(stream.name)", name: "\(id) \(stream.name)", source: id,
                    width: stream.width, height: stream.height, fps: stream.fps, bitrate: stream.bitrate,
                    govLength: max(1, Int((Double(stream.fps) * configuration.live.keyframeInterval).rounded())),
                    h264Profile: stream.profile == .constrainedBaseline ? "Baseline" : "Main",
                    streamURI: port.map { "rtsp://\(context.hostName):\($0)/\(id)\(sub ? "/sub" : "")" } ?? "",
                    snapshotURI: "\(context.base)/cameras/\(id)/snapshot"))
            }
        }
        return out
    }

    func users() -> [(name: String, level: String)] {
        configuration.auth.users.map { ($0.name, $0.role == .operator ? "Administrator" : "User") }
    }

    func scopes() async -> [String] {
        let name = cameras.main.cameras[0].descriptor.name
        let escape = { (s: String) in s.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? s }
        return ["onvif://www.onvif.org/name/\(escape("Viewfinder " + cameras.main.id))",
                "onvif://www.onvif.org/hardware/\(escape(name))"]
    }
}

extension Application {
    /// Who an ONVIF request is: anyone is an operator without accounts (as over HTTP); else
    /// a UsernameToken of a Viewfinder user, failures counted per address as HTTP's are.
    func onvifGate(nonces: NonceMemory) -> ONVIFGate {
        { [access, logger] credentials, context in
            guard access.settings.mode == .accounts else { return .granted(.operate) }
            let now = SystemSupport.Clock.monotonic()
            if let wait = access.limiter.retryAfter(context.remoteAddress, now: now) {
                return .tooManyFailures(seconds: Int(wait.rounded(.up)))
            }
            guard let c = credentials else { return .refused("sign in with a Viewfinder user (a WS-Security UsernameToken).") }
            let token = UsernameToken(username: c.username, password: c.password, isDigest: c.isDigest, nonce: c.nonce, created: c.created)
            switch access.authenticator.authenticate(token, now: context.now, nonces: nonces) {
            case .authenticated(_, let role): return .granted(role == .operator ? .operate : .read)
            case .failed(let reason):
                access.limiter.record(context.remoteAddress, now: now)
                logger.warning("ONVIF sign-in failed from \(context.remoteAddress): \(reason)")
                return .refused("those credentials are not valid here.")
            case .missing, .stale: return .refused("sign in with a Viewfinder user (a WS-Security UsernameToken).")
            }
        }
    }
}

/// The motion detector's events carried to ONVIF's pull points: each camera's motion
/// starting and ending becomes its property's change (the broker queues it per pull point).
final class ONVIFMotionFeed: Sendable {
    let broker: EventBroker
    private let subscription: EventSubscription

    init(events: EventHub, cameras: [String], broker: EventBroker) {
        self.broker = broker
        broker.declare(sources: cameras, now: SystemSupport.Clock.now())
        subscription = events.subscription(initial: [], kind: "onvif")
        subscription.attach { [weak self] in self?.drain() }
        drain()
    }

    private func drain() {
        while case .item(let event) = subscription.next() {
            guard case .motion(let m) = event, m.event != .moving else { continue }
            broker.motion(source: m.camera, moving: m.event == .started, at: SystemSupport.Clock.now())
        }
    }

    deinit { subscription.cancel() }
}
