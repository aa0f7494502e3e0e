import Foundation
import Testing
@testable import Capture

/// A sysfs + /dev fixture in a temp directory, laid out as the kernel does: the class entry
/// is a symlink into the device tree, its `device` a relative symlink to the USB interface
/// (1-1:1.0), whose parent is the USB device with idVendor, idProduct and serial.
final class SysfsFixture {
    let root: String
    var sysfs: String { "\(root)/sys" }
    var dev: String { "\(root)/dev" }
    private let fm = FileManager.default

    init() throws {
        root = NSTemporaryDirectory() + "v4l2-identity-\(UUID().uuidString)"
        try fm.createDirectory(atPath: "\(root)/sys/class/video4linux", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: "\(root)/dev", withIntermediateDirectories: true)
    }

    deinit { try? fm.removeItem(atPath: root) }

    private func write(_ path: String, _ text: String) throws {
        try fm.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try (text + "\n").write(toFile: path, atomically: false, encoding: .utf8)
    }

    /// A USB camera on bus `bus` (USB path `<bus>-1`) with its nodes: number → sysfs index.
    func usbCamera(bus: Int, vendor: String = "046d", product: String = "082d", serial: String?,
                   nodes: [(number: Int, index: Int)]) throws {
        let usbPath = "\(bus)-1"
        let usb = "devices/platform/dummy_hcd.\(bus - 1)/usb\(bus)/\(usbPath)"
        try write("\(sysfs)/\(usb)/idVendor", vendor)
        try write("\(sysfs)/\(usb)/idProduct", product)
        if let serial { try write("\(sysfs)/\(usb)/serial", serial) }
        try write("\(sysfs)/\(usb)/product", "HD Pro Webcam C920")
        for n in nodes {
            let node = "\(usb)/\(usbPath):1.0/video4linux/video\(n.number)"
            try write("\(sysfs)/\(node)/index", "\(n.index)")
            try write("\(sysfs)/\(node)/name", "HD Pro Webcam C920: HD Pro Webc")
            try fm.createSymbolicLink(atPath: "\(sysfs)/\(node)/device", withDestinationPath: "../../../\(usbPath):1.0")
            try fm.createSymbolicLink(atPath: "\(sysfs)/class/video4linux/video\(n.number)",
                                      withDestinationPath: "../../\(node)")
            try write("\(dev)/video\(n.number)", "")
        }
    }

    /// vivid's node: a platform device, no USB parent.
    func platformNode(_ number: Int, device: String = "vivid.0", name: String = "vivid-000-vid-cap") throws {
        let node = "devices/platform/\(device)/video4linux/video\(number)"
        try write("\(sysfs)/\(node)/index", "0")
        try write("\(sysfs)/\(node)/name", name)
        try fm.createSymbolicLink(atPath: "\(sysfs)/\(node)/device", withDestinationPath: "../../../\(device)")
        try fm.createSymbolicLink(atPath: "\(sysfs)/class/video4linux/video\(number)", withDestinationPath: "../../\(node)")
        try write("\(dev)/video\(number)", "")
    }

    func unplug(_ numbers: Int...) throws {
        for n in numbers {
            let link = "\(sysfs)/class/video4linux/video\(n)"
            try fm.removeItem(atPath: "\(sysfs)/class/video4linux/" + fm.destinationOfSymbolicLink(atPath: link))
            try fm.removeItem(atPath: link)
            try? fm.removeItem(atPath: "\(dev)/video\(n)")
        }
    }
}

private func noBus(_: String) -> String? { nil }

@Suite struct V4L2IdentityTests {
    @Test func usbCameraWithASerialIsNamedBySerial() throws {
        let f = try SysfsFixture()
        try f.usbCamera(bus: 1, serial: "UVCTB0001", nodes: [(2, 0), (3, 1)])
        let id = try #require(V4L2Identity.identify(node: "/dev/video2", sysfs: f.sysfs, busInfo: noBus))
        #expect(id.id == "usb-046d_082d-UVCTB0001")
        #expect(id.vendor == "046d" && id.product == "082d" && id.serial == "UVCTB0001")
        #expect(id.usbPath == "1-1" && id.index == 0 && id.node == "video2" && id.busInfo == nil)
        // the metadata node is the same device
        #expect(V4L2Identity.identify(node: "video3", sysfs: f.sysfs, busInfo: noBus)?.id == "usb-046d_082d-UVCTB0001")
        #expect(V4L2Identity.identify(node: "video3", sysfs: f.sysfs, busInfo: noBus)?.index == 1)
    }

    @Test func usbCameraWithoutSerialIsNamedByItsPath() throws {
        let f = try SysfsFixture()
        try f.usbCamera(bus: 1, product: "0825", serial: nil, nodes: [(2, 0)])
        let id = try #require(V4L2Identity.identify(node: "/dev/video2", sysfs: f.sysfs, busInfo: noBus))
        #expect(id.id == "usb-046d_0825-at-1-1")
        #expect(id.serial == nil && id.usbPath == "1-1")
        #expect(V4L2Identity.currentNode(for: "usb-046d_0825-at-1-1", sysfs: f.sysfs, dev: f.dev) == "\(f.dev)/video2")
    }

    @Test func platformDeviceIsNamedByBusInfo() throws {
        let f = try SysfsFixture()
        try f.platformNode(0)
        try f.platformNode(1, device: "vivid.1", name: "vivid-001-vid-cap")
        let bus: (String) -> String? = { path in
            ["\(f.dev)/video0": "platform:vivid-000", "\(f.dev)/video1": "platform:vivid-001",
             "/dev/video0": "platform:vivid-000"][path]
        }
        let id = try #require(V4L2Identity.identify(node: "/dev/video0", sysfs: f.sysfs, busInfo: bus))
        #expect(id.id == "platform-vivid-000" && id.busInfo == "platform:vivid-000" && id.vendor == nil)
        #expect(V4L2Identity.currentNode(for: "platform-vivid-001", sysfs: f.sysfs, dev: f.dev, busInfo: bus)
                == "\(f.dev)/video1")
        // no bus_info (node cannot be opened): the node name, last resort
        #expect(V4L2Identity.identify(node: "/dev/video0", sysfs: f.sysfs, busInfo: noBus)?.id == "video0")
        // no such node at all
        #expect(V4L2Identity.identify(node: "/dev/video9", sysfs: f.sysfs, busInfo: noBus) == nil)
    }

    @Test func replugUnderAnotherNumberIsFoundAgain() throws {
        let f = try SysfsFixture()
        try f.usbCamera(bus: 1, serial: "UVCTB0001", nodes: [(2, 0), (3, 1)])
        let id = try #require(V4L2Identity.identify(node: "/dev/video2", sysfs: f.sysfs, busInfo: noBus)).id
        #expect(V4L2Identity.currentNode(for: id, sysfs: f.sysfs, dev: f.dev) == "\(f.dev)/video2")
        try f.unplug(2, 3)
        #expect(V4L2Identity.currentNode(for: id, sysfs: f.sysfs, dev: f.dev) == nil, "unplugged")
        // the old node was held open: the camera comes back as video3 (capture) + video4 (metadata)
        try f.usbCamera(bus: 1, serial: "UVCTB0001", nodes: [(3, 0), (4, 1)])
        #expect(V4L2Identity.currentNode(for: id, sysfs: f.sysfs, dev: f.dev) == "\(f.dev)/video3")
    }

    @Test func sameSerialOnAnotherUSBPortIsTheSameCamera() throws {
        let f = try SysfsFixture()
        try f.usbCamera(bus: 1, serial: "UVCTB0001", nodes: [(2, 0), (3, 1)])
        let before = try #require(V4L2Identity.identify(node: "video2", sysfs: f.sysfs, busInfo: noBus))
        try f.unplug(2, 3)
        try f.usbCamera(bus: 2, serial: "UVCTB0001", nodes: [(5, 0), (6, 1)])
        let node = try #require(V4L2Identity.currentNode(for: before.id, sysfs: f.sysfs, dev: f.dev))
        #expect(node == "\(f.dev)/video5")
        let after = try #require(V4L2Identity.identify(node: node, sysfs: f.sysfs, busInfo: noBus))
        #expect(after.id == before.id && after.usbPath == "2-1" && before.usbPath == "1-1")
    }

    @Test func theMetadataNodeIsSkipped() throws {
        let f = try SysfsFixture()
        // metadata (index 1) on the lower number, capture on the higher
        try f.usbCamera(bus: 1, serial: "UVCTB0001", nodes: [(4, 1), (7, 0)])
        try f.usbCamera(bus: 2, product: "0825", serial: "UVCTB0002", nodes: [(2, 0), (3, 1)])
        #expect(V4L2Identity.currentNode(for: "usb-046d_082d-UVCTB0001", sysfs: f.sysfs, dev: f.dev) == "\(f.dev)/video7")
        #expect(V4L2Identity.currentNode(for: "usb-046d_0825-UVCTB0002", sysfs: f.sysfs, dev: f.dev) == "\(f.dev)/video2")
        #expect(V4L2Identity.currentNode(for: "usb-046d_082d-UVCTB0003", sysfs: f.sysfs, dev: f.dev) == nil)
    }

    @Test func idFragmentsAreCleaned() {
        #expect(V4L2Identity.clean("platform:vivid-000") == "platform-vivid-000")
        #expect(V4L2Identity.clean("PCI:0000:01:00.0") == "PCI-0000-01-00.0")
        #expect(V4L2Identity.clean("AB 12/ü") == "AB-12-_")
    }
}
