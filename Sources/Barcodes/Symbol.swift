// Codes drawn as their specifications lay them out: a grid of dark and light modules, the
// quiet zone included. QR comes from libqrencode; EAN-13 and Code 128 are laid out here from
// their standards (ISO/IEC 15420, ISO/IEC 15417), which are tables, not algorithms.

import CameraCore
import CQREncode
import SystemSupport
import Glibc

/// Modules row by row, `true` dark. A 1D code has one row (its height is the drawer's).
public struct ModuleGrid: Sendable, Equatable {
    public let width: Int
    public let height: Int
    public let dark: [Bool]

    public subscript(x: Int, y: Int) -> Bool { dark[y * width + x] }
}

public enum SymbolError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidValue(MetadataObjectType, String)
    case unsupported(MetadataObjectType)
    case library(SystemError)

    public var description: String {
        switch self {
        case .invalidValue(let t, let why): "\(t.rawValue): \(why)"
        case .unsupported(let t): "the scene cannot draw \(t.rawValue) (it draws qr, ean13 and code128)"
        case .library(let e): e.description
        }
    }
}

public enum Symbol {
    /// The types the scene can draw.
    public static let drawable: [MetadataObjectType] = [.qr, .ean13, .code128]

    public static func grid(_ type: MetadataObjectType, _ value: String) throws(SymbolError) -> ModuleGrid {
        switch type {
        case .qr: try qr(value)
        case .ean13: try ean13(value)
        case .code128: try code128(value)
        default: throw .unsupported(type)
        }
    }

    /// QR at error correction level M, with the four-module quiet zone. The limit counts
    /// characters, as the API's schema does (maxLength); 500 of them are at most 2,000 UTF-8
    /// bytes, within level M's 2,331. The bytes are given with their count, so a NUL in the
    /// text is encoded, not an end.
    static func qr(_ value: String) throws(SymbolError) -> ModuleGrid {
        guard (1...500).contains(value.unicodeScalars.count) else { throw .invalidValue(.qr, "1 to 500 characters") }
        let bytes = Array(value.utf8)
        guard let code = QRcode_encodeData(Int32(bytes.count), bytes, 0, QR_ECLEVEL_M) else {
            throw .library(.last("QRcode_encodeData"))
        }
        defer { QRcode_free(code) }
        let n = Int(code.pointee.width), quiet = 4, side = n + 2 * quiet
        var dark = [Bool](repeating: false, count: side * side)
        for y in 0..<n { for x in 0..<n where code.pointee.data[y * n + x] & 1 == 1 { dark[(y + quiet) * side + x + quiet] = true } }
        return ModuleGrid(width: side, height: side, dark: dark)
    }

    /// Bars from widths, starting with a bar, between quiet zones of `quiet` modules.
    static func bars(_ widths: [Int], quiet: Int) -> ModuleGrid {
        var dark = [Bool](repeating: false, count: quiet)
        for (i, w) in widths.enumerated() { dark += [Bool](repeating: i % 2 == 0, count: w) }
        dark += [Bool](repeating: false, count: quiet)
        return ModuleGrid(width: dark.count, height: 1, dark: dark)
    }
}
