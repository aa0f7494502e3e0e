// Which sound card is a camera's own microphone. A USB webcam is one USB device with a video
// function (uvcvideo: /dev/videoN) and an audio function (snd-usb-audio: cardM); sysfs links
// each to its interface, and the interfaces share the USB device as their parent. So `auto`
// walks from the video node to its USB device and takes the card under the same device with
// a capture PCM — found again at every start, since a replugged webcam comes back under
// another card number (and another node).

import Foundation
import SystemSupport

public enum SoundCards {
    /// The ALSA capture PCM of the sound card on the same USB device as the video node
    /// `node` (`hw:CARD=C920,DEV=0`), or nil when the camera has none.
    public static func microphone(forVideoNode node: String, sysfs: String = "/sys") -> String? {
        let video = (node as NSString).lastPathComponent
        guard let camera = usbDevice(of: "\(sysfs)/class/video4linux/\(video)/device") else { return nil }
        let cards = ((try? Sys.directoryEntries("\(sysfs)/class/sound")) ?? [])
            .filter { $0.hasPrefix("card") && Int($0.dropFirst(4)) != nil }
            .sorted { Int($0.dropFirst(4))! < Int($1.dropFirst(4))! }
        for card in cards {
            let dir = "\(sysfs)/class/sound/\(card)"
            guard usbDevice(of: "\(dir)/device") == camera else { continue }
            let number = String(card.dropFirst(4))
            let entries = (try? Sys.directoryEntries(dir)) ?? []
            // pcmC<card>D<dev>c: a capture PCM of this card (playback ones end in p).
            let devices = entries.compactMap { e -> Int? in
                guard e.hasPrefix("pcmC\(number)D"), e.hasSuffix("c") else { return nil }
                return Int(e.dropFirst("pcmC\(number)D".count).dropLast())
            }.sorted()
            guard let device = devices.first else { continue }
            let id = (try? Sys.readText("\(dir)/id"))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            return id.map { "hw:CARD=\($0),DEV=\(device)" } ?? "hw:\(number),\(device)"
        }
        return nil
    }

    /// The USB device a function's interface belongs to (`…/1-1` of `…/1-1/1-1:1.0`): the
    /// resolved path's parent when the path is a USB interface (its name has a colon).
    /// sysfs's links are relative to where they really are (`/sys/class/sound/card1` is itself
    /// a link into /sys/devices, and its `device` is `../../../1-1:1.2` from there): the
    /// kernel's realpath(3) resolves them, through the project's one syscall funnel.
    static func usbDevice(of link: String) -> String? {
        guard let resolved = try? Sys.realpath(link) else { return nil }
        let name = (resolved as NSString).lastPathComponent
        guard name.contains(":") else { return nil }
        return (resolved as NSString).deletingLastPathComponent
    }
}
