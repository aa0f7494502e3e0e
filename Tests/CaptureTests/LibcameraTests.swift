// The libcamera facade on a machine without libcamera cameras (the host; the VM's vimc camera
// is Tests/libcamera's): the manager starts and lists what libcamera lists, the library
// linked is the one pkg-config names, ids become URL-safe, and DRM's fourccs map to the pixel
// formats with the same bytes in memory (DRM's BGR888 is V4L2's RGB24: R, G, B).

import CameraCore
@testable import Capture
import Foundation
import Testing

@Suite struct LibcameraTests {
    @Test func theManagerStartsAndIsTheLibraryPkgConfigNames() throws {
        let manager = try LibcameraManager.shared.get()
        let pkg = Process()
        pkg.executableURL = URL(fileURLWithPath: "/usr/bin/pkg-config")
        pkg.arguments = ["--modversion", "libcamera"]
        let out = Pipe()
        pkg.standardOutput = out
        try pkg.run()
        pkg.waitUntilExit()
        let version = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        // libcamera's own string is its git tag ("v0.0.3"); pkg-config's has no "v".
        #expect(LibcameraManager.version == "v" + version || LibcameraManager.version.hasPrefix("v" + version + "+"),
                "linked \(LibcameraManager.version), built against \(version)")
        // The same manager every time (libcamera allows one a process), and a camera it does
        // not have is refused by name.
        #expect(try LibcameraManager.shared.get() === manager)
        #expect(throws: CameraError.self) { try manager.formats(of: "no such camera") }
        let absent = LibcameraCamera(id: "pi", camera: "no such camera", manager: manager)
        #expect(absent.formats.isEmpty && absent.descriptor.kind == .libcamera && absent.descriptor.device == "no such camera")
        #expect(throws: CameraError.self) {
            try absent.start(format: VideoFormat(pixelFormat: .rgb24, width: 640, height: 480, fps: 30)) { _ in }
        }
    }

    @Test func idsAreURLSafe() {
        #expect(LibcameraCamera.identifier("platform/vimc.0 Sensor B") == "platform-vimc.0-sensor-b")
        #expect(LibcameraCamera.identifier("/base/axi/pcie@120000/rp1/i2c@80000/imx708@1a") == "base-axi-pcie-120000-rp1-i2c-80000-imx708-1a")
        #expect(LibcameraCamera.identifier("///") == "libcamera")
    }

    @Test func drmFourccsAreTheFormatsWithTheSameBytes() {
        func fourcc(_ s: String) -> UInt32 { s.utf8.enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) } }
        #expect(LibcameraManager.pixelFormat(fourcc: fourcc("BG24")) == .rgb24, "DRM BGR888: R, G, B in memory")
        #expect(LibcameraManager.pixelFormat(fourcc: fourcc("RG24")) == .bgr24, "DRM RGB888: B, G, R in memory")
        #expect(LibcameraManager.pixelFormat(fourcc: fourcc("YUYV")) == .yuyv && LibcameraManager.pixelFormat(fourcc: fourcc("NV12")) == .nv12)
        #expect(LibcameraManager.pixelFormat(fourcc: fourcc("BA81")) == nil, "raw Bayer is not a format the encoders take")
        for (_, format) in LibcameraManager.fourccs { #expect(LibcameraManager.pixelFormat(fourcc: LibcameraManager.fourcc(format)!) == format) }
    }

    /// A sysfs tree as the kernel lays it out: media devices on the media bus, each a link to
    /// its directory under the device that made it, whose `driver` link names the driver.
    @Test func onlyAMediaDeviceBeyondAWebcamStartsTheManager() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("vf-sysfs-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let fm = FileManager.default
        func media(_ n: Int, under device: String, driver: String) throws {
            try fm.createDirectory(atPath: "\(root)/devices/\(device)/media\(n)", withIntermediateDirectories: true)
            try fm.createDirectory(atPath: "\(root)/bus/drivers/\(driver)", withIntermediateDirectories: true)
            try fm.createSymbolicLink(atPath: "\(root)/devices/\(device)/driver", withDestinationPath: "\(root)/bus/drivers/\(driver)")
            try fm.createSymbolicLink(atPath: "\(root)/bus/media/media\(n)", withDestinationPath: "../../devices/\(device)/media\(n)")
        }
        try fm.createDirectory(atPath: "\(root)/bus/media", withIntermediateDirectories: true)
        #expect(!LibcameraManager.mediaBeyondWebcams(in: "\(root)/bus/media"), "no media device")
        try media(0, under: "pci0000:00/usb1/1-1/1-1:1.0", driver: "uvcvideo")
        #expect(!LibcameraManager.mediaBeyondWebcams(in: "\(root)/bus/media"), "a webcam's alone")
        try media(1, under: "platform/vimc.0", driver: "vimc")
        #expect(LibcameraManager.mediaBeyondWebcams(in: "\(root)/bus/media"), "vimc's beside it")
    }
}
