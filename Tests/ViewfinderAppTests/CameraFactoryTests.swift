// Which V4L2 cameras are found again after a replug by their identity, and which by their path.

import Testing
@testable import ViewfinderApp

@Suite struct CameraFactoryTests {
    /// vimc's capture nodes (Raw Capture 0 and 1, RGB/YUV Capture) share one bus_info: a locator
    /// by that identity finds the first of them, so a configured RGB/YUV Capture node would be
    /// opened as Raw Capture 0. Such a node is named by its path; a webcam keeps its identity.
    @Test func anIdentitySeveralCaptureNodesShareFindsNone() {
        let identities: [String?] = ["usb-046d_082d-A1B2", "platform-vimc.0", "platform-vimc.0", "platform-vimc.0", nil]
        #expect(CameraFactory.finding("usb-046d_082d-A1B2", among: identities) == "usb-046d_082d-A1B2")
        #expect(CameraFactory.finding("platform-vimc.0", among: identities) == nil)
        #expect(CameraFactory.finding("platform-vivid.0", among: identities + ["platform-vivid.0"]) == "platform-vivid.0")
        #expect(CameraFactory.locator(CameraFactory.finding("platform-vimc.0", among: identities)) == nil)
    }
}
