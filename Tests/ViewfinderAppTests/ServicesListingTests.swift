// GET /api/cameras says where other programs reach the cameras (the page's Connect panel):
// the RTSP server's port, and the ONVIF device's address as the asker reached it, with
// whether discovery announces it and why not.

import Foundation
import Testing
@testable import ViewfinderApp

@Suite struct ServicesListingTests {
    static func services(_ port: Int) async throws -> [String: Any] {
        let listed = try #require(try await fetch(port, "/api/cameras").json as? [String: Any])
        return try #require(listed["services"] as? [String: Any])
    }

    @Test func theListingSaysWhereNVRsAndPlayersReachTheCameras() async throws {
        try await withServer({ $0.rtsp.enabled = true; $0.rtsp.port = 0 }) { app, port in
            let services = try await Self.services(port)
            #expect(services["rtsp"] as? Int == app.rtspPort && app.rtspPort != nil)
            let onvif = try #require(services["onvif"] as? [String: Any])
            #expect(onvif["enabled"] as? Bool == true)
            // The address the asker used, its Host header as sent (the test client's has no port).
            #expect(onvif["deviceService"] as? String == "http://127.0.0.1/onvif/device_service")
            #expect(onvif["discovery"] as? String == "off while HTTP listens on 127.0.0.1 only", "\(onvif["discovery"] ?? "")")
        }
        try await withServer({ $0.onvif.enabled = false; $0.rtsp.enabled = false }) { _, port in
            let services = try await Self.services(port)
            #expect(services["rtsp"] is NSNull)
            let onvif = try #require(services["onvif"] as? [String: Any])
            #expect(onvif["enabled"] as? Bool == false && onvif["deviceService"] is NSNull)
            #expect(onvif["discovery"] as? String == "off (onvif.enabled is false)")
        }
    }
}
