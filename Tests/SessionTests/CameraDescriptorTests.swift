// Which camera runs when none is named: one rule, read by the session, the main-session
// choice at start-up and the camera listing's `main`.

import CameraCore
import Testing

@Suite struct CameraDescriptorTests {
    static func camera(_ id: String, _ position: CameraDescriptor.Position) -> CameraDescriptor {
        CameraDescriptor(id: id, name: id, position: position, kind: .synthetic)
    }

    @Test func theDefaultIsTheRearCameraElseTheFirst() {
        #expect(CameraDescriptor.defaultIndex(in: [Self.camera("f", .front), Self.camera("u", .external), Self.camera("r", .rear)]) == 2)
        #expect(CameraDescriptor.defaultIndex(in: [Self.camera("r1", .rear), Self.camera("r2", .rear)]) == 0, "the first rear one")
        #expect(CameraDescriptor.defaultIndex(in: [Self.camera("u", .external), Self.camera("f", .front)]) == 0)
        #expect(CameraDescriptor.defaultIndex(in: []) == nil)
    }
}
