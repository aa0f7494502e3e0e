// What the API answers with, as the contract spells it: a camera of /api/cameras, who the
// page talks as, a stored photo.

import CameraCore
import Foundation
import HTTPServer
import Session

struct CameraInfo: Encodable {
    var id: String, name: String, position: String, kind: String
    var device: String?
    var available: Bool
    var formats: [FormatOption]
    var capabilities: Capabilities
    /// Its session's run state, and whether that session is the main one.
    var state: String
    var main: Bool
    /// Its live streams (main and sub): size, rate, cap and encoder at its current format;
    /// empty in `viewfinder cameras` (no session is made there).
    var live: [LiveStreamReport] = []
    /// Its microphone: the device and what it offers (or why that cannot be read); null: none.
    var audio: AudioInfo?
    /// Its talk-back speaker and whether someone talks through it now; null: none.
    var speaker: SpeakerInfo?

    struct SpeakerInfo: Encodable {
        var device: String
        var talking: Bool
    }

    struct AudioInfo: Encodable {
        var device: String
        var capabilities: AudioCapabilities?
        var error: String?

        func encode(to encoder: Encoder) throws {
            enum K: String, CodingKey { case device, rates, channels, mixer, gainDb, error }
            var c = encoder.container(keyedBy: K.self)
            try c.encode(device, forKey: .device)
            if let caps = capabilities {
                try c.encode(caps.rates, forKey: .rates)
                try c.encode(caps.channels, forKey: .channels)
                try c.encode(caps.mixer, forKey: .mixer)
                try c.encode(caps.gainDb, forKey: .gainDb)
            }
            try c.encode(error, forKey: .error)
        }
    }

    func encode(to encoder: Encoder) throws {
        enum K: String, CodingKey { case id, name, position, kind, device, available, formats, capabilities, state, main, audio, speaker, live }
        var c = encoder.container(keyedBy: K.self)
        try c.encode(id, forKey: .id); try c.encode(name, forKey: .name)
        try c.encode(position, forKey: .position); try c.encode(kind, forKey: .kind)
        try c.encode(device, forKey: .device)  // explicit null, as the contract shows
        try c.encode(available, forKey: .available)
        try c.encode(formats, forKey: .formats); try c.encode(capabilities, forKey: .capabilities)
        try c.encode(state, forKey: .state); try c.encode(main, forKey: .main)
        try c.encode(audio, forKey: .audio)
        try c.encode(speaker, forKey: .speaker)
        if !live.isEmpty { try c.encode(live, forKey: .live) }
    }
}

struct Me: Encodable {
    var name: String?
    var role: String
    var authentication: Bool

    func encode(to encoder: Encoder) throws {
        enum K: String, CodingKey { case name, role, authentication }
        var c = encoder.container(keyedBy: K.self)
        try c.encode(name, forKey: .name)  // explicit null without a user
        try c.encode(role, forKey: .role)
        try c.encode(authentication, forKey: .authentication)
    }
}

/// A stored photo as the API shows it: the store's record plus where to fetch it.
struct PhotoJSON: Encodable {
    var id: String, url: String, bytes: Int, width: Int, height: Int, capturedAt: String
    var camera: String?
    var keep: Bool
    var timestamp: Double
    var set: String?
    var at: Double?

    init(_ p: PhotoInfo) {
        id = p.id; url = "/api/photos/\(p.id)"; bytes = p.bytes; width = p.width; height = p.height; capturedAt = p.capturedAt
        camera = p.camera
        keep = p.keep
        timestamp = p.timestamp
        set = p.set
        at = p.at
    }

    func encode(to encoder: Encoder) throws {
        enum K: String, CodingKey { case id, url, bytes, width, height, capturedAt, camera, keep, timestamp, set, at }
        var c = encoder.container(keyedBy: K.self)
        try c.encode(id, forKey: .id); try c.encode(url, forKey: .url); try c.encode(bytes, forKey: .bytes)
        try c.encode(width, forKey: .width); try c.encode(height, forKey: .height)
        try c.encode(capturedAt, forKey: .capturedAt)
        try c.encode(camera, forKey: .camera)  // null for a photo from before cameras were recorded
        try c.encode(keep, forKey: .keep)
        try c.encode(timestamp, forKey: .timestamp)
        if let set { try c.encode(set, forKey: .set) }  // a synchronized set's photo only
        if let at { try c.encode(at, forKey: .at) }
    }
}

/// A JSON answer.
func json<T: Encodable>(_ value: T, status: Int = 200, headers: [(String, String)] = []) -> Response {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.withoutEscapingSlashes]
    let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
    return Response(status: status, contentType: "application/json", bytes: [UInt8](data), headers: headers)
}

/// `POST /api/fleet/capture`'s answer: the set, its moment, where the hosts answer.
struct FleetStarted: Encodable {
    var set: String
    var at: Double
    var replies: String
    var photos: String
}

/// `GET /api/cameras`: the cameras, and the live H.264 encoders their streams may be made by,
/// in the order they are tried (`live.encoders`), each with whether this machine has it.
struct CameraList: Encodable {
    var cameras: [CameraInfo]
    var encoders: [LiveEncoderChain.Entry]
    var services: Services
}

/// Where other programs reach the cameras, as the request's host sees them: the RTSP server's
/// port (null when it does not run), and the ONVIF device's service address and discovery.
struct Services: Encodable {
    struct ONVIF: Encodable {
        var enabled: Bool
        /// `http(s)://<the host asked>/onvif/device_service`, what an NVR is given; null when off.
        var deviceService: String?
        /// "on (eth0 192.168.1.20)", or off and why.
        var discovery: String
        enum CodingKeys: String, CodingKey { case enabled, deviceService, discovery }

        func encode(to encoder: Encoder) throws {  // null, not left out, when off
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(enabled, forKey: .enabled); try c.encode(deviceService, forKey: .deviceService); try c.encode(discovery, forKey: .discovery)
        }
    }
    var rtsp: Int?
    var onvif: ONVIF
    enum CodingKeys: String, CodingKey { case rtsp, onvif }

    func encode(to encoder: Encoder) throws {  // null, not left out, when RTSP does not run
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(rtsp, forKey: .rtsp); try c.encode(onvif, forKey: .onvif)
    }
}
