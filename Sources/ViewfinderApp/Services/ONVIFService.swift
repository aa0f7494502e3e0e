// The cameras as an ONVIF device (issue 39): its identity, the interface a client reached it
// on, and a media profile per live stream of every camera — the main and the sub H.264
// stream — whose stream URI is the RTSP server's and whose snapshot is the camera's
// /snapshot. Sign-in is the same users as HTTP's, through WS-Security's UsernameToken, counted
// by the same failure limiter.

import Auth
import CameraCore
import Foundation
import HTTPServer
import Logging
import ONVIF
import SOAP
import Session
import SystemSupport

struct ONVIFService: ONVIFDevice {
    let cameras: MultiCamSession
    let configuration: Configuration
    /// The RTSP server's bound port, nil when it does not run.
    let rtspPort: @Sendable () -> Int?

    func information() async -> DeviceInformation {
        let main = cameras.main
        let camera = main.camera.descriptor
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
        var listed = names.compactMap { name -> NetworkInterface? in
            guard let link = try? Sys.link(name) else { return nil }
            return NetworkInterface(name: name, mac: link.mac, mtu: link.mtu,
                                    ipv4: addresses.filter { $0.interface == name }.map { ($0.address, $0.prefixLength) })
        }
        // The first interface's MAC is the device's identity to a client (Home Assistant's
        // unique id). Loopback has none — 00:00:00:00:00:00, the same on every host — so a client
        // on this machine is given the first interface with a MAC of its own first.
        if let first = listed.first, Self.noMAC(first.mac), let real = listed.firstIndex(where: { !Self.noMAC($0.mac) }) {
            listed.insert(listed.remove(at: real), at: 0)
        }
        return listed
    }

    static func noMAC(_ mac: String) -> Bool { mac.allSatisfy { $0 == "0" || $0 == ":" } }

    func profiles(_ context: ONVIFContext) async -> [MediaProfile] {
        var out: [MediaProfile] = []
        let port = rtspPort()
        for session in cameras.sessions {
            let id = session.id
            let state = await session.state()
            // The sound the camera's RTSP streams carry while its microphone runs (RTSPService).
            let audio = session.soundTrack(.aac).map {
                AudioProfile(source: "\(id)_mic", sampleRate: $0.sampleRate, channels: $0.channels, bitrate: $0.bitrate / 1000)
            }
            for stream in state.live where stream.name != LiveStreamName.vp8.rawValue {  // VP8: WebRTC's alone
                let sub = stream.name == "sub"
                out.append(MediaProfile(
                    token: "\(id)_\(stream.name)", name: "\(id) \(stream.name)", source: id,
                    width: stream.width, height: stream.height, fps: stream.fps, bitrate: stream.bitrate,
                    govLength: govLength(fps: stream.fps),
                    h264Profile: stream.profile == .constrainedBaseline ? "Baseline" : "Main",
                    streamURI: port.map { "rtsp://\(context.hostName):\($0)/\(id)\(sub ? "/sub" : "")" } ?? "",
                    snapshotURI: "\(context.base)/cameras/\(id)/snapshot", audio: audio))
            }
            if let jpeg = jpegProfile(session, state, port: port, context), jpeg.width <= RTSPService.largestJPEG, jpeg.height <= RTSPService.largestJPEG {
                out.append(jpeg)
            }
        }
        return out
    }

    /// The camera's RTP/JPEG stream (`/<id>/jpeg`): the preview's pictures at the camera's size
    /// and rate, their quality the preview's (0…100 as ONVIF's 0…10); no cap, so its
    /// BitrateLimit is what the newest picture makes at that rate (0 before any).
    func jpegProfile(_ session: CaptureSession, _ state: SessionState, port: Int?, _ context: ONVIFContext) -> MediaProfile? {
        // The picture is the main stream's: the camera's size as sent (turned) and its rate.
        guard let main = state.live.first(where: { $0.name == LiveStreamName.main.rawValue }) else { return nil }
        let id = session.id
        let newest = session.hub.latestFrame.map { $0.jpegRange.count } ?? 0
        var p = MediaProfile(token: "\(id)_jpeg", name: "\(id) jpeg", source: id, width: main.width, height: main.height, fps: main.fps,
                             bitrate: newest * 8 * main.fps / 1000, govLength: 1, h264Profile: "",
                             streamURI: port.map { "rtsp://\(context.hostName):\($0)/\(id)/jpeg" } ?? "",
                             snapshotURI: "\(context.base)/cameras/\(id)/snapshot")
        p.encoding = .jpeg
        p.quality = min(10, max(0, (state.stream.quality + 5) / 10))
        return p
    }

    /// Frames between unasked keyframes at `fps` (`live.keyframeInterval` seconds).
    func govLength(fps: Int) -> Int { max(1, Int((Double(fps) * configuration.live.keyframeInterval).rounded())) }

    func users() -> [(name: String, level: String)] {
        configuration.auth.users.map { ($0.name, $0.role == .operator ? "Administrator" : "User") }
    }

    func scopes() async -> [String] {
        let name = cameras.main.camera.descriptor.name
        let escape = { (s: String) in s.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? s }
        return ["onvif://www.onvif.org/name/\(escape("Viewfinder " + cameras.main.id))",
                "onvif://www.onvif.org/hardware/\(escape(name))"]
    }
}

extension Application {
    /// Who an ONVIF request is: anyone is an operator without accounts (as over HTTP); else
    /// a UsernameToken of a Viewfinder user, failures counted per address as HTTP's are, or
    /// the user HTTP Digest signed in.
    func onvifGate(nonces: NonceMemory) -> ONVIFGate {
        { [access, logger] credentials, context in
            guard access.settings.mode == .accounts else { return .granted(.operate) }
            let now = SystemSupport.Clock.monotonic()
            if let wait = access.limiter.retryAfter(context.remoteAddress, now: now) {
                return .tooManyFailures(seconds: Int(wait.rounded(.up)))
            }
            guard let c = credentials else {
                // HTTP Digest (or Basic), checked at the HTTP gate, or nothing yet: ask for it.
                if let signedIn = context.signedIn { return .granted(signedIn) }
                return .challenge("sign in with a Viewfinder user (a WS-Security UsernameToken, or HTTP Digest).")
            }
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

/// PTZ on the session: zoom normalized over the camera's range (the lens, then the crop),
/// pan and tilt as the crop's centre seen in the picture's orientation (ONVIF's x right and
/// y up), read back from the state.
extension ONVIFService {
    private func session(_ source: String) -> CaptureSession? { try? cameras.session(source) }

    /// The picture's transform now: its digital zoom, orientation and the centre asked for.
    private func transform(_ s: SessionState) -> FrameTransform {
        FrameTransform(zoom: s.zoom.digital, rotation: s.orientation.rotation, mirrored: s.orientation.mirrored, center: s.zoom.center)
    }

    func ptzPosition(_ source: String) async -> (position: PTZPosition, moving: PTZMoving)? {
        guard let session = session(source) else { return nil }
        let s = await session.state()
        let t = transform(s)
        var shown = t
        shown.center = t.effectiveCenter
        let c = shown.outputCenter
        let range = s.zoom.max - s.zoom.min
        return (PTZPosition(pan: 2 * c.x - 1, tilt: 1 - 2 * c.y, zoom: range > 0 ? (s.zoom.factor - s.zoom.min) / range : 0),
                PTZMoving(panTilt: s.zoom.panning, zoom: s.zoom.ramping))
    }

    func ptzMove(_ source: String, pan: Double?, tilt: Double?, zoom: Double?, zoomSpeed: Double?) async throws(SOAPFault) {
        guard let session = session(source) else { throw Self.noSource(source) }
        let s = await session.state()
        var center: Point?
        if pan != nil || tilt != nil {
            let t = transform(s)
            var shown = t
            shown.center = t.effectiveCenter
            let now = shown.outputCenter
            let target = Point(x: pan.map { ($0 + 1) / 2 } ?? now.x, y: tilt.map { (1 - $0) / 2 } ?? now.y)
            let p = t.sourcePoint(ofOutput: target)
            center = Point(x: min(max(p.x, 0), 1), y: min(max(p.y, 0), 1))
        }
        do throws(SessionError) {
            if let zoom {
                let factor = s.zoom.min + min(max(zoom, 0), 1) * (s.zoom.max - s.zoom.min)
                // Speed 1: three doublings a second (1× to 8× in one).
                try await session.zoom(ZoomRequest(factor: factor, rate: zoomSpeed.map { max(0.1, $0 * 3) }, center: center))
            } else if let center {
                try await session.center(center)
            }
        } catch {
            throw Self.moveFailed(error)
        }
    }

    /// Velocity 1 pans the whole generic range (-1…1) in two seconds, and zooms two doublings
    /// a second; the session runs the move on its clock and ends it at the timeout.
    func ptzContinuous(_ source: String, pan: Double, tilt: Double, zoom: Double, timeout: Double) async throws(SOAPFault) {
        guard let session = session(source) else { throw Self.noSource(source) }
        // The output's velocity (half its width a second at 1; tilt up is y down) in the
        // source's coordinates, through the transform's rotation and mirror.
        let t = transform(await session.state())
        let o = t.sourcePoint(ofOutput: .center), d = t.sourcePoint(ofOutput: Point(x: 0.5 + pan / 2, y: 0.5 - tilt / 2))
        do throws(SessionError) {
            try await session.move(MoveRequest(velocity: Point(x: d.x - o.x, y: d.y - o.y), zoomRate: zoom * 2, duration: timeout))
        } catch {
            throw Self.moveFailed(error)
        }
    }

    func ptzStop(_ source: String, panTilt: Bool, zoom: Bool) async throws(SOAPFault) {
        guard let session = session(source) else { throw Self.noSource(source) }
        do throws(SessionError) { try await session.stopMove(pan: panTilt, zoom: zoom) } catch { throw Self.moveFailed(error) }
    }

    func fieldOfView(_ source: String) async -> (width: Double, height: Double)? {
        guard let session = session(source) else { return nil }
        let d = max(1, await session.state().zoom.digital)
        return (1 / d, 1 / d)
    }

    static func noSource(_ source: String) -> SOAPFault {
        SOAPFault(.sender, [QName(ONVIFNamespace.error, "InvalidArgVal"), QName(ONVIFNamespace.error, "NoEntity")], "No camera '\(source)'.")
    }

    /// The session's refusal of a move, as the fault a client reads (the camera's own message kept).
    static func moveFailed(_ error: SessionError) -> SOAPFault {
        SOAPFault(.receiver, [QName(ONVIFNamespace.error, "Action"), QName(ONVIFNamespace.error, "MoveFailed")], "\(error)")
    }

    /// The session's refusal of imaging settings: a value or mode the camera does not take is
    /// the request's fault (`ter:SettingsInvalid`, the Imaging service's own); a camera that
    /// failed or is not running is the device's.
    static func settingsRefused(_ error: SessionError) -> SOAPFault {
        switch error {
        case .invalidValue, .unsupported, .camera(.refused), .camera(.unsupportedControl):
            SOAPFault(.sender, [QName(ONVIFNamespace.error, "InvalidArgVal"), QName(ONVIFNamespace.error, "SettingsInvalid")], "\(error)")
        default:
            SOAPFault(.receiver, [QName(ONVIFNamespace.error, "Action")], "\(error)")
        }
    }
}

/// Imaging on the session: ONVIF's AUTO is the continuous (or one-shot) mode, MANUAL the locked
/// focus and white balance and the custom exposure (time and ISO, which ONVIF calls gain);
/// each change the session's own call, read back from the state.
extension ONVIFService {
    func imaging(_ source: String) async -> ImagingState? {
        guard let session = try? cameras.session(source),
              session.camera.descriptor.id == source else { return nil }
        let caps = session.camera.capabilities
        let s = await session.state()
        func modes(auto: Bool, manual: Bool) -> [Bool] { (auto ? [true] : []) + (manual ? [false] : []) }
        let focusAuto = caps.focusModes.contains(.continuous) || caps.focusModes.contains(.auto)
        let exposureAuto = caps.exposureModes.contains(.continuous) || caps.exposureModes.contains(.auto)
        let wbAuto = caps.whiteBalanceModes.contains(.continuous) || caps.whiteBalanceModes.contains(.auto)
        return ImagingState(
            focus: .init(auto: s.focus.mode != .locked, position: caps.lensPosition ? s.focus.lensPosition : nil,
                         modes: modes(auto: focusAuto, manual: caps.focusModes.contains(.locked))),
            exposure: .init(auto: s.exposure.mode == .auto || s.exposure.mode == .continuous, time: s.exposure.duration * 1e6,
                            gain: s.exposure.iso, timeRange: caps.exposureDuration.map { ($0.min * 1e6)...($0.max * 1e6) },
                            gainRange: caps.iso.map { $0.min...$0.max }, modes: modes(auto: exposureAuto, manual: caps.exposureModes.contains(.custom))),
            whiteBalance: .init(auto: s.whiteBalance.mode != .locked,
                                modes: modes(auto: wbAuto, manual: caps.whiteBalanceModes.contains(.locked))),
            adjustments: await adjustments(session))
    }

    /// The V4L2 control each ONVIF adjustment is (by its key, as `/api/session/controls` has it).
    static let adjustmentControls: [ImagingAdjustment: String] = [
        .brightness: "brightness", .colorSaturation: "saturation", .contrast: "contrast", .sharpness: "sharpness",
        .backlightCompensation: "backlight_compensation",
    ]

    /// The adjustments the camera has as integer controls it lets be set, read from it now.
    private func adjustments(_ session: CaptureSession) async -> [ImagingAdjustment: Adjustment] {
        guard let controls = try? await session.controls() else { return [:] }
        var out: [ImagingAdjustment: Adjustment] = [:]
        for (name, key) in Self.adjustmentControls {
            guard let c = controls.first(where: { $0.key == key }), c.kind == .integer, !c.readOnly, !c.disabled, let v = c.value else { continue }
            out[name] = Adjustment(value: Double(v), range: Double(c.minimum)...Double(c.maximum))
        }
        return out
    }

    func setImaging(_ source: String, _ change: ImagingChange) async throws(SOAPFault) {
        guard let session = try? cameras.session(source), session.camera.descriptor.id == source else { throw Self.noSource(source) }
        let caps = session.camera.capabilities
        func autoMode<M: RawRepresentable & Equatable>(_ modes: [M], _ continuous: M, _ auto: M) -> String where M.RawValue == String {
            (modes.contains(continuous) ? continuous : auto).rawValue
        }
        let s = await session.state()
        do throws(SessionError) {
            if change.focusAuto == true {
                try await session.focus(FocusRequest(mode: autoMode(caps.focusModes, FocusMode.continuous, .auto)))
            } else if change.focusAuto == false || change.focusPosition != nil {
                try await session.focus(FocusRequest(mode: FocusMode.locked.rawValue, lensPosition: caps.lensPosition ? change.focusPosition : nil))
            }
            if change.exposureAuto == true {
                try await session.exposure(ExposureRequest(mode: autoMode(caps.exposureModes, ExposureMode.continuous, .auto)))
            } else if change.exposureAuto == false || change.exposureTime != nil || change.gain != nil {
                try await session.exposure(ExposureRequest(mode: ExposureMode.custom.rawValue,
                                                           duration: change.exposureTime.map { $0 / 1e6 } ?? s.exposure.duration,
                                                           iso: change.gain ?? s.exposure.iso))
            }
            if let auto = change.whiteBalanceAuto {
                try await session.whiteBalance(WhiteBalanceRequest(
                    mode: auto ? autoMode(caps.whiteBalanceModes, WhiteBalanceMode.continuous, .auto) : WhiteBalanceMode.locked.rawValue))
            }
            // The camera's own controls, as POST /api/session/controls sets them (stepped by the device).
            let controls = Dictionary(uniqueKeysWithValues: change.adjustments.compactMap { name, value in
                Self.adjustmentControls[name].map { ($0, Int(value.rounded())) }
            })
            if !controls.isEmpty { _ = try await session.setControls(controls) }
        } catch {
            throw Self.settingsRefused(error)
        }
    }
}
