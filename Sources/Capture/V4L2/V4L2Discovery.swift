// Finds the V4L2 nodes that can capture video and lists what they offer: name, bus,
// formats we can use, frame sizes and rates (ENUM_FMT / ENUM_FRAMESIZES /
// ENUM_FRAMEINTERVALS). Metadata and output-only nodes are skipped.

import CV4L2
import CameraCore
import Foundation
import SystemSupport

public struct V4L2Node: Sendable, Equatable {
    public var path: String
    public var name: String
    public var bus: String
    /// The kernel driver (`VIDIOC_QUERYCAP`'s `driver`: "uvcvideo", "vimc", "unicam").
    public var driver: String = ""
    public var formats: [FormatOption]

    /// Drivers whose nodes are one stage of a media-controller pipeline that a libcamera
    /// pipeline handler drives (a sensor's raw Bayer, an ISP's input or output): offered
    /// through libcamera, never as V4L2 cameras of their own.
    public static let libcameraDrivers: Set<String> = ["vimc", "unicam", "rp1-cfe", "bcm2835-isp", "pispbe", "rkisp1",
                                                       "ipu3-cio2", "ipu3-imgu", "mxc-isi", "sun6i-csi"]

    /// Whether libcamera owns this node (see `libcameraDrivers`).
    public var isLibcameraStage: Bool { Self.libcameraDrivers.contains(driver) }
}

public enum V4L2Discovery {
    /// `/dev/video*` in numeric order.
    public static func nodePaths(in dir: String = "/dev") -> [String] {
        let names = (try? Sys.directoryEntries(dir)) ?? []
        return names.compactMap { n -> (Int, String)? in
            guard n.hasPrefix("video"), let i = Int(n.dropFirst(5)) else { return nil }
            return (i, "\(dir)/\(n)")
        }.sorted { $0.0 < $1.0 }.map(\.1)
    }

    public static func captureNodes(in dir: String = "/dev") -> [V4L2Node] {
        nodePaths(in: dir).compactMap { try? describe($0) }
    }

    /// Name, bus and formats of one node, or nil when it cannot capture video.
    public static func describe(_ path: String) throws(CameraError) -> V4L2Node? {
        let device = try V4L2Device(path: path)
        defer { device.close() }
        let cap = try device.capability()
        let caps = V4L2Device.nodeCaps(cap)
        guard caps & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0, caps & UInt32(V4L2_CAP_STREAMING) != 0 else { return nil }
        let formats = enumerateFormats(device.fd)
        guard !formats.isEmpty else { return nil }
        return V4L2Node(path: path, name: V4L2Call.string(cap.card), bus: V4L2Call.string(cap.bus_info),
                        driver: V4L2Call.string(cap.driver), formats: formats)
    }

    static let standardSizes = [(320, 240), (352, 288), (640, 360), (640, 480), (800, 600), (1024, 768),
                                (1280, 720), (1280, 960), (1920, 1080), (2560, 1440), (3840, 2160)]
    static let standardRates = [60, 50, 30, 25, 20, 15, 10, 5]

    static func enumerateFormats(_ fd: Int32) -> [FormatOption] {
        var out: [FormatOption] = []
        var index: UInt32 = 0
        while true {
            var desc = v4l2_fmtdesc()
            desc.index = index
            desc.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            guard (try? V4L2Call.ioctl(fd, CV4L2_VIDIOC_ENUM_FMT, "VIDIOC_ENUM_FMT", &desc)) != nil else { break }
            index += 1
            guard let pf = V4L2Call.pixelFormat(desc.pixelformat) else { continue }
            for (w, h) in sizes(fd, desc.pixelformat) {
                let rates = intervals(fd, desc.pixelformat, w, h)
                out.append(FormatOption(pixelFormat: pf, width: w, height: h, fps: rates.isEmpty ? [30] : rates))
            }
        }
        return out
    }

    static func sizes(_ fd: Int32, _ fourcc: UInt32) -> [(Int, Int)] {
        var out: [(Int, Int)] = []
        var index: UInt32 = 0
        while true {
            var fs = v4l2_frmsizeenum()
            fs.index = index
            fs.pixel_format = fourcc
            guard (try? V4L2Call.ioctl(fd, CV4L2_VIDIOC_ENUM_FRAMESIZES, "VIDIOC_ENUM_FRAMESIZES", &fs)) != nil else { break }
            index += 1
            if fs.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                out.append((Int(fs.discrete.width), Int(fs.discrete.height)))
            } else {  // stepwise or continuous: offer the standard sizes inside the range
                let s = fs.stepwise
                out += standardSizes.filter { $0.0 >= s.min_width && $0.0 <= s.max_width && $0.1 >= s.min_height && $0.1 <= s.max_height }
                break
            }
        }
        return out
    }

    static func intervals(_ fd: Int32, _ fourcc: UInt32, _ w: Int, _ h: Int) -> [Int] {
        var out: [Int] = []
        var index: UInt32 = 0
        while true {
            var fi = v4l2_frmivalenum()
            fi.index = index
            fi.pixel_format = fourcc
            fi.width = UInt32(w)
            fi.height = UInt32(h)
            guard (try? V4L2Call.ioctl(fd, CV4L2_VIDIOC_ENUM_FRAMEINTERVALS, "VIDIOC_ENUM_FRAMEINTERVALS", &fi)) != nil else { break }
            index += 1
            if fi.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue {
                let d = fi.discrete
                if d.numerator > 0 { out.append(Int((Double(d.denominator) / Double(d.numerator)).rounded())) }
            } else {
                let s = fi.stepwise  // intervals: the fastest rate is 1/min
                let fastest = Double(s.min.denominator) / Double(max(s.min.numerator, 1))
                let slowest = Double(s.max.denominator) / Double(max(s.max.numerator, 1))
                out += standardRates.filter { Double($0) <= fastest + 0.5 && Double($0) >= slowest - 0.5 }
                break
            }
        }
        return Array(Set(out)).sorted(by: >)
    }
}
