// The device and media services as a client sees them, over a device of two cameras (a main
// and a sub stream each): who may call what, what each answer holds, and the faults — all
// through the envelope bytes the server reads and writes.

import ONVIF
import SOAP
import SystemSupport
import Testing
import TimeTestSupport

/// Each camera's zoom and digital pan as a device does them: zoom 1×…8× (0…1 linear), the
/// crop's centre reaching only as far as the zoom leaves room (±(1 − 1/factor) in the generic
/// space), a speed makes the zoom "move" until it is held, and a continuous move runs on the
/// model's own clock (which the test advances) until its timeout or a stop: velocity 1 pans
/// the generic range in two seconds and zooms the whole range in one.
final class CropModel: Sendable {
    struct Move { var pan = 0.0, tilt = 0.0, zoom = 0.0, start = 0.0, end = 0.0 }
    struct Camera { var zoom = 0.0, pan = 0.0, tilt = 0.0, ramping = false, move = Move() }
    let cameras = Locked(["rear": Camera(), "front": Camera()])
    let clock = ManualTimekeeper()
    /// Each continuous move's timeout, as the service passed it.
    let timeouts = Locked<[Double]>([])

    static func factor(_ zoom: Double) -> Double { 1 + 7 * zoom }

    /// The camera at `t`: its move's parts run up to the move's end, each within its range.
    static func settled(_ c: Camera, at t: Double) -> Camera {
        var c = c
        let dt = max(0, min(t, c.move.end) - c.move.start)
        c.zoom = min(max(c.zoom + c.move.zoom * dt, 0), 1)
        let reach = 1 - 1 / factor(c.zoom)
        c.pan = min(max(c.pan + c.move.pan * dt, -reach), reach)
        c.tilt = min(max(c.tilt + c.move.tilt * dt, -reach), reach)
        c.move.start = t
        if t >= c.move.end { c.move = Move() }
        return c
    }

    private func change(_ s: String, _ body: (inout Camera) -> Void) {
        let now = clock.now
        cameras.withLock { all in
            guard let c = all[s] else { return }
            var settled = Self.settled(c, at: now)
            body(&settled)
            all[s] = settled
        }
    }

    func position(_ s: String) -> (position: PTZPosition, moving: PTZMoving)? {
        let now = clock.now
        return cameras.withLock { all in
            all[s].map { raw in
                let c = Self.settled(raw, at: now)
                return (PTZPosition(pan: c.pan, tilt: c.tilt, zoom: c.zoom),
                        PTZMoving(panTilt: c.move.pan != 0 || c.move.tilt != 0, zoom: c.ramping || c.move.zoom != 0))
            }
        }
    }

    func move(_ s: String, pan: Double?, tilt: Double?, zoom: Double?, speed: Double?) {
        change(s) { c in
            if let zoom { c.zoom = zoom; c.ramping = speed != nil; c.move.zoom = 0 }
            let reach = 1 - 1 / Self.factor(c.zoom)
            if let pan { c.pan = min(max(pan, -reach), reach); c.move.pan = 0 }
            if let tilt { c.tilt = min(max(tilt, -reach), reach); c.move.tilt = 0 }
        }
    }

    func continuous(_ s: String, pan: Double, tilt: Double, zoom: Double, timeout: Double) {
        timeouts.withLock { $0.append(timeout) }
        let now = clock.now
        change(s) { c in
            c.ramping = false
            c.move = Move(pan: pan, tilt: tilt, zoom: zoom, start: now, end: now + timeout)
        }
    }

    func stop(_ s: String, panTilt: Bool, zoom: Bool) {
        change(s) { c in
            if panTilt { c.move.pan = 0; c.move.tilt = 0 }
            if zoom { c.move.zoom = 0; c.ramping = false }
        }
    }
}

/// Each camera's imaging as devices have it: the rear one a C920-like webcam (focus auto or
/// a lens position, exposure auto or 100…200 000 µs at gain 50…3200, white balance auto or
/// locked; brightness and contrast 0…255, backlight compensation 0…1 as its controls), the
/// front one fixed (everything automatic, no lens, no controls). Values the session would
/// clamp arrive here already checked by the service; this model refuses what the camera would.
final class ImagingModel: Sendable {
    let state = Locked([
        "rear": ImagingState(focus: .init(auto: true, position: 0.5, modes: [true, false]),
                             exposure: .init(auto: true, time: 16_667, gain: 100, timeRange: 100...200_000, gainRange: 50...3200, modes: [true, false]),
                             whiteBalance: .init(auto: true, modes: [true, false]),
                             adjustments: [.brightness: Adjustment(value: 128, range: 0...255), .contrast: Adjustment(value: 32, range: 0...255),
                                           .backlightCompensation: Adjustment(value: 0, range: 0...1)]),
        "front": ImagingState(focus: .init(auto: false, position: nil, modes: [false]),
                              exposure: .init(auto: true, time: 33_333, gain: 100, timeRange: nil, gainRange: nil, modes: [true]),
                              whiteBalance: .init(auto: true, modes: [true])),
    ])

    func apply(_ source: String, _ c: ImagingChange) {
        state.withLock { all in
            guard var s = all[source] else { return }
            if let a = c.focusAuto { s.focus?.auto = a }
            if let p = c.focusPosition { s.focus?.position = p; s.focus?.auto = false }
            if let a = c.exposureAuto { s.exposure?.auto = a }
            if let t = c.exposureTime { s.exposure?.time = t }
            if let g = c.gain { s.exposure?.gain = g }
            if let a = c.whiteBalanceAuto { s.whiteBalance?.auto = a }
            for (name, v) in c.adjustments { s.adjustments[name]?.value = v.rounded() }  // integer controls
            all[source] = s
        }
    }
}

struct TwoCameras: ONVIFDevice {
    var lens = CropModel()
    var picture = ImagingModel()
    var streams = StreamModel()

    func imaging(_ source: String) async -> ImagingState? { picture.state.withLock { $0[source] } }
    func setImaging(_ source: String, _ change: ImagingChange) async throws(SOAPFault) { picture.apply(source, change) }

    func ptzPosition(_ source: String) async -> (position: PTZPosition, moving: PTZMoving)? { lens.position(source) }
    func ptzMove(_ source: String, pan: Double?, tilt: Double?, zoom: Double?, zoomSpeed: Double?) async throws(SOAPFault) {
        lens.move(source, pan: pan, tilt: tilt, zoom: zoom, speed: zoomSpeed)
    }
    func ptzContinuous(_ source: String, pan: Double, tilt: Double, zoom: Double, timeout: Double) async throws(SOAPFault) {
        lens.continuous(source, pan: pan, tilt: tilt, zoom: zoom, timeout: timeout)
    }
    func ptzStop(_ source: String, panTilt: Bool, zoom: Bool) async throws(SOAPFault) { lens.stop(source, panTilt: panTilt, zoom: zoom) }
    func fieldOfView(_ source: String) async -> (width: Double, height: Double)? {
        lens.position(source).map { (1 / CropModel.factor($0.position.zoom), 1 / CropModel.factor($0.position.zoom)) }
    }

    func information() async -> DeviceInformation {
        DeviceInformation(manufacturer: "Viewfinder", model: "Synthetic", firmwareVersion: "1.2.3", serialNumber: "vf-rear", hardwareId: "synthetic")
    }
    func hostname() -> String { "camhost" }
    func interfaces(_ c: ONVIFContext) -> [NetworkInterface] {
        [NetworkInterface(name: "eth0", mac: "02:00:00:aa:bb:cc", mtu: 1500, ipv4: [("192.168.1.20", 24)])]
    }
    func profiles(_ c: ONVIFContext) async -> [MediaProfile] { streams.profiles(c) }
    func encoderOptions(_ profile: String) async -> EncoderOptions? { streams.options(profile) }
    func setEncoder(_ profile: String, _ setting: EncoderSetting) async throws(SOAPFault) { try streams.set(profile, setting) }
    func users() -> [(name: String, level: String)] { [("ha", "User"), ("admin", "Administrator")] }
    func scopes() async -> [String] { ["onvif://www.onvif.org/name/Viewfinder"] }
}

@Suite struct ONVIFServerTests {
    let context = ONVIFContext(host: "192.168.1.20:8080", secure: false, remoteAddress: "192.168.1.9", now: 1_795_930_801)

    /// A server whose gate lets "viewer" read, "operator" operate, and refuses anyone else.
    func server() -> ONVIFServer {
        ONVIFServer(device: TwoCameras()) { credentials, _ in
            switch credentials?.username {
            case "viewer": .granted(.read)
            case "operator": .granted(.operate)
            case nil: .refused("no UsernameToken")
            default: .refused("wrong password for '\(credentials!.username)'")
            }
        }
    }

    func call(_ ns: String, _ body: String, user: String? = "viewer") async throws -> (Int, XMLElement) {
        let security = user.map { """
            <s:Header><wsse:Security xmlns:wsse="\(ONVIFNamespace.security)" xmlns:wsu="\(ONVIFNamespace.securityUtility)">
            <wsse:UsernameToken><wsse:Username>\($0)</wsse:Username>
            <wsse:Password Type="\(ONVIFNamespace.passwordDigest)">x</wsse:Password>
            <wsse:Nonce>MDEyMzQ1Njc4OWFiY2RlZg==</wsse:Nonce><wsu:Created>2026-11-29T05:40:01Z</wsu:Created>
            </wsse:UsernameToken></wsse:Security></s:Header>
            """ } ?? ""
        let xml = "<s:Envelope xmlns:s=\"\(SOAPNamespace.envelope)\" xmlns:o=\"\(ns)\">\(security)<s:Body>\(body)</s:Body></s:Envelope>"
        let answer = await server().handle(Array(xml.utf8), context: context)
        return (answer.status, try Envelope.read(answer.body).operation)
    }

    @Test func theClockAndTheServicesNeedNoSignIn() async throws {
        let (status, time) = try await call(ONVIFNamespace.device, "<o:GetSystemDateAndTime/>", user: nil)
        #expect(status == 200)
        let utc = try #require(time["SystemDateAndTime", "UTCDateTime"])
        #expect(utc["Date", "Year"]?.text == "2026" && utc["Date", "Month"]?.text == "11" && utc["Date", "Day"]?.text == "29")
        #expect(utc["Time", "Hour"]?.text == "5" && utc["Time", "Minute"]?.text == "40" && utc["Time", "Second"]?.text == "1")
        #expect(time["SystemDateAndTime", "DateTimeType"]?.text == "NTP")

        let (_, caps) = try await call(ONVIFNamespace.device, "<o:GetCapabilities><o:Category>All</o:Category></o:GetCapabilities>", user: nil)
        #expect(caps["Capabilities", "Device", "XAddr"]?.text == "http://192.168.1.20:8080/onvif/device_service")
        #expect(caps["Capabilities", "Media", "XAddr"]?.text == "http://192.168.1.20:8080/onvif/media_service")
        #expect(caps["Capabilities", "Events", "XAddr"]?.text == "http://192.168.1.20:8080/onvif/events_service")
        #expect(caps["Capabilities", "Events", "WSPullPointSupport"]?.text == "true")
        #expect(caps["Capabilities", "PTZ", "XAddr"]?.text == "http://192.168.1.20:8080/onvif/ptz_service")

        let (_, services) = try await call(ONVIFNamespace.device, "<o:GetServices><o:IncludeCapability>false</o:IncludeCapability></o:GetServices>", user: nil)
        #expect(services.children("Service").compactMap { $0.child("Namespace")?.text } == [ONVIFNamespace.device, ONVIFNamespace.media, ONVIFNamespace.media2, ONVIFNamespace.events, ONVIFNamespace.ptz, ONVIFNamespace.imaging])
    }

    @Test func everythingElseNeedsAUserWithTheRightRole() async throws {
        let (status, fault) = try await call(ONVIFNamespace.device, "<o:GetDeviceInformation/>", user: nil)
        #expect(status == 400)
        #expect(fault["Code", "Value"]?.text == "s:Sender")
        #expect(fault["Code", "Subcode", "Value"]?.text == "ter:NotAuthorized")
        #expect(fault["Reason", "Text"]?.text == "Sender not Authorized: no UsernameToken")

        let (_, wrong) = try await call(ONVIFNamespace.device, "<o:GetDeviceInformation/>", user: "mallory")
        #expect(wrong["Reason", "Text"]?.text.contains("wrong password for 'mallory'") == true)

        let (viewerStatus, users) = try await call(ONVIFNamespace.device, "<o:GetUsers/>", user: "viewer")
        #expect(viewerStatus == 400)
        #expect(users["Reason", "Text"]?.text.contains("needs an operator") == true)
        let (operatorStatus, list) = try await call(ONVIFNamespace.device, "<o:GetUsers/>", user: "operator")
        #expect(operatorStatus == 200)
        #expect(list.children("User").compactMap { $0.child("Username")?.text } == ["ha", "admin"])
        #expect(list.children("User").allSatisfy { $0.child("Password") == nil })
    }

    @Test func theDeviceSaysWhoItIs() async throws {
        let (_, info) = try await call(ONVIFNamespace.device, "<o:GetDeviceInformation/>")
        #expect(info.child("Manufacturer")?.text == "Viewfinder" && info.child("SerialNumber")?.text == "vf-rear"
                && info.child("FirmwareVersion")?.text == "1.2.3")
        let (_, nics) = try await call(ONVIFNamespace.device, "<o:GetNetworkInterfaces/>")
        let nic = try #require(nics.child("NetworkInterfaces"))
        #expect(nic.attribute("token") == "eth0" && nic.child("Enabled")?.text == "true")
        #expect(nic["Info", "HwAddress"]?.text == "02:00:00:aa:bb:cc")
        #expect(nic["IPv4", "Config", "Manual", "Address"]?.text == "192.168.1.20")
        let (_, scopes) = try await call(ONVIFNamespace.device, "<o:GetScopes/>")
        let items = scopes.children("Scopes").compactMap { $0.child("ScopeItem")?.text }
        #expect(items.contains("onvif://www.onvif.org/Profile/Streaming") && items.contains("onvif://www.onvif.org/name/Viewfinder"))
    }

    @Test func aProfilePerStreamWithItsURIs() async throws {
        let (_, profiles) = try await call(ONVIFNamespace.media, "<o:GetProfiles/>")
        let list = profiles.children("Profiles")
        #expect(list.compactMap { $0.attribute("token") } == ["rear_main", "rear_sub", "rear_jpeg", "front_main", "front_sub", "front_jpeg"])
        let main = try #require(list.first)
        #expect(main["VideoEncoderConfiguration", "Encoding"]?.text == "H264")
        #expect(main["VideoEncoderConfiguration", "Resolution", "Width"]?.text == "1280")
        #expect(main["VideoEncoderConfiguration", "RateControl", "BitrateLimit"]?.text == "2200")
        #expect(main["VideoSourceConfiguration", "SourceToken"]?.text == "rear")

        let setup = "<o:StreamSetup><t:Stream xmlns:t=\"\(ONVIFNamespace.schema)\">RTP-Unicast</t:Stream><t:Transport xmlns:t=\"\(ONVIFNamespace.schema)\"><t:Protocol>RTSP</t:Protocol></t:Transport></o:StreamSetup>"
        let (_, stream) = try await call(ONVIFNamespace.media, "<o:GetStreamUri>\(setup)<o:ProfileToken>front_sub</o:ProfileToken></o:GetStreamUri>")
        #expect(stream["MediaUri", "Uri"]?.text == "rtsp://192.168.1.20:8554/front/sub")
        let (_, snap) = try await call(ONVIFNamespace.media, "<o:GetSnapshotUri><o:ProfileToken>rear_main</o:ProfileToken></o:GetSnapshotUri>")
        #expect(snap["MediaUri", "Uri"]?.text == "http://192.168.1.20:8080/cameras/rear/snapshot")
    }

    @Test func badArgumentsAndUnknownActionsAreFaultsNotErrors() async throws {
        let (status, none) = try await call(ONVIFNamespace.media, "<o:GetStreamUri><o:ProfileToken>nope</o:ProfileToken></o:GetStreamUri>")
        #expect(status == 400)
        #expect(none["Code", "Subcode", "Value"]?.text == "ter:InvalidArgVal")
        #expect(none["Code", "Subcode", "Subcode", "Value"]?.text == "ter:NoProfile")
        let multicast = "<o:StreamSetup><t:Stream xmlns:t=\"\(ONVIFNamespace.schema)\">RTP-Multicast</t:Stream></o:StreamSetup>"
        let (_, mc) = try await call(ONVIFNamespace.media, "<o:GetStreamUri>\(multicast)<o:ProfileToken>rear_main</o:ProfileToken></o:GetStreamUri>")
        #expect(mc["Reason", "Text"]?.text.contains("RTP-Unicast") == true)
        let (unknown, action) = try await call(ONVIFNamespace.device, "<o:SystemReboot/>")
        #expect(unknown == 400)
        #expect(action["Code", "Subcode", "Value"]?.text == "ter:ActionNotSupported")
        #expect(action["Reason", "Text"]?.text.contains("not implemented") == true)  // what HA's client looks for
        let answer = await server().handle(Array("<x".utf8), context: context)
        #expect(answer.status == 400)
        #expect(try Envelope.read(answer.body).operation.name.local == "Fault")
    }
}

/// A request with no credentials at all, where the operation needs some: the gate may ask for
/// HTTP Digest (a 401 whose fault comes with the challenge); what HTTP's sign-in already
/// allowed the caller reaches the gate in the context.
@Suite struct ONVIFChallengeTests {
    let server = ONVIFServer(device: TwoCameras()) { credentials, context in
        guard credentials == nil else { return .granted(.read) }
        return context.signedIn.map { .granted($0) } ?? .challenge("sign in")
    }

    func call(_ body: String, signedIn: ONVIFAccess? = nil) async throws -> (ONVIFAnswer, XMLElement) {
        let xml = "<s:Envelope xmlns:s=\"\(SOAPNamespace.envelope)\" xmlns:d=\"\(ONVIFNamespace.device)\"><s:Body>\(body)</s:Body></s:Envelope>"
        let answer = await server.handle(Array(xml.utf8), context: ONVIFContext(host: "h:80", secure: false, remoteAddress: "a", now: 0, signedIn: signedIn))
        return (answer, try Envelope.read(answer.body).operation)
    }

    @Test func noCredentialsIsA401WithTheChallengeAndAFault() async throws {
        let (answer, fault) = try await call("<d:GetDeviceInformation/>")
        #expect(answer.status == 401 && answer.challenge)
        #expect(SignedCaller.subcode(fault) == "NotAuthorized" && fault["Reason", "Text"]?.text == "Sender not Authorized: sign in")
        let (open, _) = try await call("<d:GetSystemDateAndTime/>")
        #expect(open.status == 200 && !open.challenge, "what needs no sign-in asks for none")
        // curl's --digest probes with an empty POST: the challenge, not a parse fault.
        let probe = await server.handle([], context: ONVIFContext(host: "h:80", secure: false, remoteAddress: "a", now: 0))
        #expect(probe.status == 401 && probe.challenge)
    }

    @Test func whatHTTPSignInAllowedIsWhatTheCallerMayDo() async throws {
        let (read, info) = try await call("<d:GetDeviceInformation/>", signedIn: .read)
        #expect(read.status == 200 && info.child("Manufacturer")?.text == "Viewfinder")
        let (users, fault) = try await call("<d:GetUsers/>", signedIn: .read)
        #expect(users.status == 400 && !users.challenge && fault["Reason", "Text"]?.text.contains("needs an operator") == true)
        #expect(try await call("<d:GetUsers/>", signedIn: .operate).0.status == 200)
    }
}
