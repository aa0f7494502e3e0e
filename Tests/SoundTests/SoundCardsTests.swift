// `audio: "auto"` finds a webcam's own microphone through sysfs as the kernel lays it out: a
// uvcvideo node and an snd-usb-audio card whose interfaces share one USB device. A tree
// shaped like /sys (symlinks into /sys/devices) stands in for the kernel's.

import Foundation
import Testing
@testable import Sound

@Suite struct SoundCardsTests {
    /// /sys with two webcams: a C920 on 1-1 (video0, card1 with a capture PCM), a C270 on
    /// 1-2 (video2; card2, playback only), and the machine's own card0 on PCI — laid out as
    /// the kernel does: each class entry a relative link to its device's directory, and its
    /// `device` a relative link from there (`../..` to the interface), as the uvc VM test's
    /// snd-usb-audio card has them.
    func tree() throws -> String {
        let root = NSTemporaryDirectory() + "vf-sysfs-\(UUID().uuidString)"
        let fm = FileManager.default
        func dir(_ p: String) throws { try fm.createDirectory(atPath: root + p, withIntermediateDirectories: true) }
        func link(_ p: String, _ relative: String) throws { try fm.createSymbolicLink(atPath: root + p, withDestinationPath: relative) }
        func file(_ p: String, _ text: String) throws { try text.write(toFile: root + p, atomically: true, encoding: .utf8) }
        let usb = "/devices/pci0000:00/0000:00:14.0/usb1", pch = "/devices/pci0000:00/0000:00:1f.3"
        /// A class entry `name` of `cls` for the device directory `device` (under it: `<sub>/<name>`).
        func entry(_ cls: String, _ name: String, under device: String, sub: String) throws {
            let real = "\(device)/\(sub)/\(name)"
            try dir(real)
            try dir("/class/\(cls)")
            try link("/class/\(cls)/\(name)", "../..\(real)")  // /sys/class/x/name -> ../../devices/…
            try link("\(real)/device", "../..")  // from …/iface/sub/name: the interface
        }
        try entry("video4linux", "video0", under: usb + "/1-1/1-1:1.0", sub: "video4linux")
        try entry("video4linux", "video2", under: usb + "/1-2/1-2:1.0", sub: "video4linux")
        try entry("sound", "card1", under: usb + "/1-1/1-1:1.2", sub: "sound")
        try entry("sound", "card2", under: usb + "/1-2/1-2:1.2", sub: "sound")
        try entry("sound", "card0", under: pch, sub: "sound")
        for (card, pcm, id) in [("card1", "pcmC1D0c", "C920"), ("card2", "pcmC2D0p", "U0x46d0x825"), ("card0", "pcmC0D0c", "PCH")] {
            try dir("/class/sound/\(card)/\(pcm)")
            try file("/class/sound/\(card)/id", id + "\n")
        }
        return root
    }

    @Test func aWebcamsOwnCardIsFoundByItsUSBDevice() throws {
        let sys = try tree()
        defer { try? FileManager.default.removeItem(atPath: sys) }
        #expect(SoundCards.microphone(forVideoNode: "/dev/video0", sysfs: sys) == "hw:CARD=C920,DEV=0")
        #expect(SoundCards.microphone(forVideoNode: "/dev/video2", sysfs: sys) == nil, "its card plays only: no microphone")
        #expect(SoundCards.microphone(forVideoNode: "/dev/video9", sysfs: sys) == nil, "no such node")
    }

    @Test func aReplugUnderAnotherCardNumberIsFoundAgain() throws {
        let sys = try tree()
        defer { try? FileManager.default.removeItem(atPath: sys) }
        let fm = FileManager.default
        // Unplugged: card1 goes; plugged back: the same device is card3 now.
        try fm.removeItem(atPath: sys + "/class/sound/card1")
        #expect(SoundCards.microphone(forVideoNode: "/dev/video0", sysfs: sys) == nil)
        try fm.createDirectory(atPath: sys + "/class/sound/card3/pcmC3D0c", withIntermediateDirectories: true)
        try fm.createSymbolicLink(atPath: sys + "/class/sound/card3/device",
                                  withDestinationPath: sys + "/devices/pci0000:00/0000:00:14.0/usb1/1-1/1-1:1.2")
        try "C920_1\n".write(toFile: sys + "/class/sound/card3/id", atomically: true, encoding: .utf8)
        #expect(SoundCards.microphone(forVideoNode: "/dev/video0", sysfs: sys) == "hw:CARD=C920_1,DEV=0")
    }
}
