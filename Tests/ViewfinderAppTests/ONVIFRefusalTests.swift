// What an ONVIF client reads when the session refuses: a move's refusal is PTZ's
// `ter:MoveFailed`; an imaging setting the session or the camera will not take is the Imaging
// service's own `ter:SettingsInvalid` (the request's fault, 400), and a camera that failed is
// the device's (`env:Receiver`), never a move that failed.

import CameraCore
import SOAP
import Session
import Testing
@testable import ViewfinderApp

@Suite struct ONVIFRefusalTests {
    static func subcodes(_ f: SOAPFault) -> [String] { f.subcodes.map(\.local) }

    @Test func imagingRefusalsAreTheirOwnFaultAndMovesKeepTheirs() {
        for refusal: SessionError in [.invalidValue("iso must be 50…3200"), .unsupported("exposure mode 'custom'", supported: ["continuous"]),
                                      .camera(.refused(control: "exposure_time_absolute", value: 3, errno: 22))] {
            let f = ONVIFService.settingsRefused(refusal)
            #expect(f.code == .sender && Self.subcodes(f) == ["InvalidArgVal", "SettingsInvalid"] && f.reason == "\(refusal)", "\(f)")
        }
        let failed = ONVIFService.settingsRefused(.notRunning)
        #expect(failed.code == .receiver && Self.subcodes(failed) == ["Action"], "\(failed)")
        let move = ONVIFService.moveFailed(.invalidValue("center must have x and y between 0 and 1"))
        #expect(move.code == .receiver && Self.subcodes(move) == ["Action", "MoveFailed"], "\(move)")
    }
}
