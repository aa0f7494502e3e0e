// The control seam: V4L2 controls as Swift values, behind a protocol so the camera-class
// mapping (zoom, focus, exposure, white balance, torch) can be tested on any machine
// against a fake that answers like a real webcam and records every call, in the style of
// swift-system's mocking trace.

import CV4L2
import CameraCore

public protocol ControlIO: AnyObject {
    /// Every control the device has (VIDIOC_QUERYCTRL with V4L2_CTRL_FLAG_NEXT_CTRL).
    func controls() -> [DeviceControl]
    func get(_ id: UInt32) throws(CameraError) -> Int
    func set(_ id: UInt32, _ value: Int) throws(CameraError)
}

/// Controls of an open V4L2 node.
final class FileControlIO: ControlIO {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }

    func controls() -> [DeviceControl] {
        var out: [DeviceControl] = []
        var id = UInt32(V4L2_CTRL_FLAG_NEXT_CTRL)
        while true {
            var q = v4l2_queryctrl()
            q.id = id
            guard (try? V4L2Call.ioctl(fd, CV4L2_VIDIOC_QUERYCTRL, "VIDIOC_QUERYCTRL", &q)) != nil else { break }
            id = q.id | UInt32(V4L2_CTRL_FLAG_NEXT_CTRL)
            let kind: DeviceControl.Kind = switch q.type {
            case V4L2_CTRL_TYPE_INTEGER.rawValue: .integer
            case V4L2_CTRL_TYPE_BOOLEAN.rawValue: .boolean
            case V4L2_CTRL_TYPE_MENU.rawValue: .menu
            case V4L2_CTRL_TYPE_INTEGER_MENU.rawValue: .integerMenu
            case V4L2_CTRL_TYPE_BUTTON.rawValue: .button
            default: .other
            }
            guard kind != .other, q.type != V4L2_CTRL_TYPE_CTRL_CLASS.rawValue else { continue }
            var menu: [Int: String] = [:]
            if kind == .menu || kind == .integerMenu {
                for i in q.minimum...max(q.minimum, q.maximum) {
                    var m = v4l2_querymenu()
                    m.id = q.id
                    m.index = UInt32(i)
                    guard (try? V4L2Call.ioctl(fd, CV4L2_VIDIOC_QUERYMENU, "VIDIOC_QUERYMENU", &m)) != nil else { continue }
                    menu[Int(i)] = kind == .menu ? V4L2Call.string(m.name) : String(m.value)
                }
            }
            out.append(DeviceControl(id: q.id, name: V4L2Call.string(q.name), kind: kind, minimum: Int(q.minimum),
                                   maximum: Int(q.maximum), step: Int(q.step), defaultValue: Int(q.default_value),
                                   disabled: q.flags & UInt32(V4L2_CTRL_FLAG_DISABLED) != 0,
                                   readOnly: q.flags & UInt32(V4L2_CTRL_FLAG_READ_ONLY) != 0, menu: menu))
        }
        return out
    }

    func get(_ id: UInt32) throws(CameraError) -> Int {
        var c = v4l2_control(id: id, value: 0)
        try V4L2Call.ioctl(fd, CV4L2_VIDIOC_G_CTRL, "VIDIOC_G_CTRL", &c)
        return Int(c.value)
    }

    func set(_ id: UInt32, _ value: Int) throws(CameraError) {
        var c = v4l2_control(id: id, value: Int32(clamping: value))
        try V4L2Call.ioctl(fd, CV4L2_VIDIOC_S_CTRL, "VIDIOC_S_CTRL", &c)
    }
}
