// Who a V4L2 node is, independent of its number: a camera's id must survive an unplug and
// replug (it may come back as /dev/video3 instead of /dev/video2, or on another USB port).
// Read from sysfs: /sys/class/video4linux/videoN/device is the device's interface; for a USB
// camera (uvcvideo) its parent is the USB device, with idVendor, idProduct, serial and the
// USB path as its directory name (1-1, 2-1.4). udev's /dev/v4l/by-id names are built from
// the same values; this needs no udev (the test VM has none).
//
//   USB with a serial     usb-<idVendor>_<idProduct>-<serial>       usb-046d_082d-UVCTB0001
//   USB without serial    usb-<idVendor>_<idProduct>-at-<usbpath>   usb-046d_0825-at-1-1
//   otherwise             the driver's bus_info (VIDIOC_QUERYCAP)   platform-vivid-000
//   last resort           the node name                             video3

import Foundation
import Glibc
import SystemSupport

public struct V4L2Identity: Sendable, Equatable {
    /// Stable camera id (see the table above).
    public var id: String
    /// Node name, `video2`.
    public var node: String
    /// sysfs `index`: 0 the capture node of a device, 1 its metadata node.
    public var index: Int?
    /// sysfs `name` (the card name, possibly truncated).
    public var name: String?
    /// USB `idVendor` / `idProduct`, lowercase hex as sysfs shows them (`046d`, `082d`).
    public var vendor: String?
    public var product: String?
    /// USB serial number, when the device has one.
    public var serial: String?
    /// USB device path, the sysfs name of the USB device (`1-1`).
    public var usbPath: String?
    /// The driver's bus_info, when the id came from it (`platform:vivid-000`).
    public var busInfo: String?

    public init(id: String, node: String, index: Int? = nil, name: String? = nil, vendor: String? = nil,
                product: String? = nil, serial: String? = nil, usbPath: String? = nil, busInfo: String? = nil) {
        self.id = id
        self.node = node
        self.index = index
        self.name = name
        self.vendor = vendor
        self.product = product
        self.serial = serial
        self.usbPath = usbPath
        self.busInfo = busInfo
    }

    /// The identity of `node` (`/dev/video2` or `video2`), nil when sysfs has no such node.
    /// `busInfo` maps a node path to the driver's bus_info; it is asked only for non-USB
    /// devices (the default opens the node for VIDIOC_QUERYCAP).
    public static func identify(node: String, sysfs: String = "/sys",
                                busInfo: (String) -> String? = V4L2Identity.queryBusInfo) -> V4L2Identity? {
        let name = (node as NSString).lastPathComponent
        let dir = "\(sysfs)/class/video4linux/\(name)"
        guard Sys.exists(dir) else { return nil }
        var identity = V4L2Identity(id: name, node: name, index: read("\(dir)/index").flatMap { Int($0) },
                                    name: read("\(dir)/name"))
        // device -> the USB interface (1-1:1.0); its parent is the USB device (1-1)
        if let interface = realPath("\(dir)/device") {
            let usb = (interface as NSString).deletingLastPathComponent
            if let vendor = read("\(usb)/idVendor"), let product = read("\(usb)/idProduct") {
                let path = (usb as NSString).lastPathComponent
                let serial = read("\(usb)/serial").flatMap { $0.isEmpty ? nil : $0 }
                identity.vendor = vendor
                identity.product = product
                identity.serial = serial
                identity.usbPath = path
                identity.id = "usb-\(clean(vendor))_\(clean(product))-" + (serial.map(clean) ?? "at-\(clean(path))")
                return identity
            }
        }
        let devicePath = node.hasPrefix("/") ? node : "/dev/\(name)"
        if let bus = busInfo(devicePath), !bus.isEmpty {
            identity.busInfo = bus
            identity.id = clean(bus)
        }
        return identity
    }

    /// The node that has identity `id` now, as a path under `dev`: the capture node (sysfs
    /// index 0, else the lowest index) of the device with that id, nil when none is there
    /// (unplugged, or not yet in `dev`). This is how a camera that came back as another
    /// /dev/videoN, or on another USB port with the same serial, is found again.
    public static func currentNode(for id: String, sysfs: String = "/sys", dev: String = "/dev",
                                   busInfo: (String) -> String? = V4L2Identity.queryBusInfo) -> String? {
        // a USB id never comes from bus_info: do not open other devices' nodes for it
        let usb = id.hasPrefix("usb-")
        let names = (try? Sys.directoryEntries("\(sysfs)/class/video4linux")) ?? []
        let candidates = names.compactMap { name -> (index: Int, number: Int, name: String)? in
            guard name.hasPrefix("video"), let number = Int(name.dropFirst(5)),
                  Sys.exists("\(dev)/\(name)"),
                  let identity = usb ? identify(node: "\(dev)/\(name)", sysfs: sysfs, busInfo: { _ in nil })
                                     : identify(node: "\(dev)/\(name)", sysfs: sysfs, busInfo: busInfo),
                  identity.id == id else { return nil }
            return (identity.index ?? 0, number, name)
        }
        guard let best = candidates.min(by: { ($0.index, $0.number) < ($1.index, $1.number) }) else { return nil }
        return "\(dev)/\(best.name)"
    }

    /// bus_info from VIDIOC_QUERYCAP, nil when the node cannot be opened.
    public static func queryBusInfo(_ path: String) -> String? {
        guard let device = try? V4L2Device(path: path) else { return nil }
        defer { device.close() }
        guard let cap = try? device.capability() else { return nil }
        let bus = V4L2Call.string(cap.bus_info)
        return bus.isEmpty ? nil : bus
    }

    /// An id fragment: `:`, `/` and blanks become `-`, anything else outside [A-Za-z0-9._-] `_`.
    static func clean(_ s: String) -> String {
        String(s.unicodeScalars.map { c -> Character in
            switch c {
            case "a"..."z", "A"..."Z", "0"..."9", ".", "_", "-": return Character(c)
            case ":", "/", " ", "\t": return "-"
            default: return "_"
            }
        })
    }

    private static func read(_ path: String) -> String? {
        (try? Sys.readText(path))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func realPath(_ path: String) -> String? {
        try? Sys.realpath(path)
    }
}
