// The "NO SIGNAL" frame shown while a camera is offline. It goes through the real encoder,
// as µStreamer's blank frame does, so clients see an ordinary JPEG of the usual size.

import CameraCore

public enum PlaceholderFrame {
    public static func render(width: Int, height: Int, message: String = "NO SIGNAL") -> [UInt8] {
        var frame = [UInt8](repeating: 0, count: width * height * 2)
        frame.withUnsafeMutableBytes { buf in
            let c = YUYVCanvas(buf, width: width, height: height)
            c.fill(x: 0, y: 0, width: width, height: height, YUV(r: 24, g: 24, b: 24))
            let scale = max(1, min(width / 80, height / 40))
            let w = YUYVCanvas.textWidth(message, scale: scale)
            c.drawText(message, x: (width - w) / 2, y: (height - BitmapFont.height * scale) / 2,
                       scale: scale, .white, background: nil)
        }
        return frame
    }
}
