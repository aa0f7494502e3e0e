// One SOAP request to an answer: the envelope read (SOAP module), the sign-in checked
// against what the operation needs, the operation found by its qualified name and run. Every
// refusal is a SOAP 1.2 fault in a 400 (Sender) or 500 (Receiver) — never an empty 401, which
// ONVIF's clients read as a transport failure instead of a sign-in one. The one 401 is a
// request with no credentials at all where some are needed: its fault comes with HTTP
// Digest's challenge (`challenge`), as ONVIF Core asks of a device that takes both.

import SOAP

/// What an operation needs of the caller (ONVIF Core's access classes, on Viewfinder's roles).
public enum ONVIFAccess: Int, Comparable, Sendable {
    /// Answered without sign-in (PRE_AUTH: the clock, the capabilities, the services).
    case preAuth
    /// A viewer: read the device's state and stream.
    case read
    /// An operator: change things (PTZ, imaging), read the users.
    case operate

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

public struct ONVIFCredentials: Sendable, Equatable {
    public var username, password: String
    public var isDigest: Bool
    public var nonce, created: String?
}

public enum GateAnswer: Sendable, Equatable {
    /// Signed in, allowed up to this access.
    case granted(ONVIFAccess)
    case refused(String)
    /// No credentials at all: a 401 whose fault comes with an HTTP Digest challenge.
    case challenge(String)
    case tooManyFailures(seconds: Int)
}

/// Decides who is asking: a UsernameToken's credentials, or none (the context says whether
/// HTTP's own sign-in already named someone).
public typealias ONVIFGate = @Sendable (_ credentials: ONVIFCredentials?, _ context: ONVIFContext) -> GateAnswer

public struct ONVIFAnswer: Sendable {
    public var status: Int
    public var body: [UInt8]
    /// A 401: HTTP Digest's WWW-Authenticate goes with it.
    public var challenge = false
    public static let contentType = "application/soap+xml; charset=utf-8"
}

struct Operation: Sendable {
    var access: ONVIFAccess
    var run: @Sendable (_ request: XMLElement, _ context: ONVIFContext) async throws(SOAPFault) -> XMLElement
}

public final class ONVIFServer: Sendable {
    let device: any ONVIFDevice
    let gate: ONVIFGate
    private let operations: [QName: Operation]

    /// `push`: how push subscriptions (Subscribe) deliver; without it Subscribe is not offered.
    /// `presets`: the PTZ presets (the application's, kept across restarts).
    public init(device: any ONVIFDevice, events: EventBroker = EventBroker(), push: PushDelivery? = nil,
                presets: PTZPresets = PTZPresets(), gate: @escaping ONVIFGate) {
        self.device = device
        self.gate = gate
        var ops = EventsService.operations(events, push: push)
        for (name, op) in DeviceService.operations(device, events: events, push: push != nil) { ops[QName(ONVIFNamespace.device, name)] = op }
        for (name, op) in MediaService.operations(device) { ops[QName(ONVIFNamespace.media, name)] = op }
        for (name, op) in Media2Service.operations(device) { ops[QName(ONVIFNamespace.media2, name)] = op }
        for (name, op) in PTZService.operations(device, presets) { ops[QName(ONVIFNamespace.ptz, name)] = op }
        for (name, op) in ImagingService.operations(device) { ops[QName(ONVIFNamespace.imaging, name)] = op }
        operations = ops
    }

    /// The service paths under /onvif/ that GetServices and GetCapabilities give.
    public static let paths = ["device_service", "media_service", "media2_service", "events_service", "ptz_service", "imaging_service"]

    public func handle(_ body: [UInt8], context: ONVIFContext) async -> ONVIFAnswer {
        // An empty POST without credentials is an HTTP client's sign-in probe (curl's --digest
        // sends one before the message): the challenge, not a parse fault.
        if body.isEmpty, context.signedIn == nil, case .challenge(let why) = gate(nil, context) { return Self.challenge(why) }
        do throws(SOAPFault) {
            let request = try Envelope.read(body)
            let name = request.operation.name
            guard let op = operations[name] else {
                throw SOAPFault(.sender, [QName(ONVIFNamespace.error, "ActionNotSupported")],
                                "The action \(name.local) (\(name.namespace)) is not implemented by this device.")
            }
            if op.access > .preAuth {
                let credentials = try SecurityHeader.credentials(request.header)
                switch gate(credentials, context) {
                case .granted(let level) where level >= op.access: break
                case .granted:
                    throw SOAPFault(.sender, [QName(ONVIFNamespace.error, "NotAuthorized")],
                                    "Sender not Authorized: \(name.local) needs an operator.")
                case .refused(let why):
                    throw SOAPFault(.sender, [QName(ONVIFNamespace.error, "NotAuthorized")], "Sender not Authorized: \(why)")
                case .challenge(let why):
                    return Self.challenge(why)
                case .tooManyFailures(let seconds):
                    throw SOAPFault(.sender, [QName(ONVIFNamespace.error, "NotAuthorized")],
                                    "Sender not Authorized: too many failed sign-ins from \(context.remoteAddress); try again in \(seconds) s.")
                }
            }
            let answer = try await op.run(request.operation, context)
            return ONVIFAnswer(status: 200, body: Envelope.write(body: [answer], prefixes: ONVIFNamespace.prefixes))
        } catch {
            return ONVIFAnswer(status: error.code == .receiver ? 500 : 400,
                               body: Envelope.write(fault: error, prefixes: ONVIFNamespace.prefixes))
        }
    }
}

extension ONVIFServer {
    /// A 401 with HTTP Digest's challenge, its fault saying why.
    static func challenge(_ why: String) -> ONVIFAnswer {
        let fault = SOAPFault(.sender, [QName(ONVIFNamespace.error, "NotAuthorized")], "Sender not Authorized: \(why)")
        return ONVIFAnswer(status: 401, body: Envelope.write(fault: fault, prefixes: ONVIFNamespace.prefixes), challenge: true)
    }
}

/// An argument the operation cannot take (ter:InvalidArgVal and its detail code).
func invalidArgument(_ code: String, _ reason: String) -> SOAPFault {
    SOAPFault(.sender, [QName(ONVIFNamespace.error, "InvalidArgVal"), QName(ONVIFNamespace.error, code)], reason)
}
