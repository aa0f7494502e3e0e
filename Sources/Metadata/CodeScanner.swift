// zbar's image scanner on an 8-bit luma plane ("Y800"): the symbologies asked for are
// enabled, the rest off, and each symbol found comes back with its value and the corners
// zbar located, in the plane's pixels. One owner, one thread: the metadata worker.

import CameraCore
import CZBar
import Foundation

public struct DetectedCode: Sendable, Equatable {
    public var type: MetadataObjectType
    public var value: [UInt8]
    /// The symbol's outline in the scanned plane's pixels, as zbar located it.
    public var corners: [(x: Double, y: Double)]

    public static func == (a: Self, b: Self) -> Bool {
        a.type == b.type && a.value == b.value && a.corners.elementsEqual(b.corners) { $0.x == $1.x && $0.y == $1.y }
    }
}

public final class CodeScanner {
    private let scanner: OpaquePointer
    private var enabled: Set<MetadataObjectType> = []

    public init() {
        scanner = zbar_image_scanner_create()
        // Everything off; `scan` turns on what is asked for.
        zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_ENABLE, 0)
        // A QR code's bytes as they are: zbar would otherwise guess a text encoding (UTF-8 read
        // as Shift-JIS); the API sends UTF-8 as text and anything else as base64.
        zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_BINARY, 1)
    }

    deinit { zbar_image_scanner_destroy(scanner) }

    static func zbarType(_ t: MetadataObjectType) -> zbar_symbol_type_t {
        switch t {
        case .qr: ZBAR_QRCODE
        case .ean13: ZBAR_EAN13
        case .ean8: ZBAR_EAN8
        case .upca: ZBAR_UPCA
        case .upce: ZBAR_UPCE
        case .isbn10: ZBAR_ISBN10
        case .isbn13: ZBAR_ISBN13
        case .code128: ZBAR_CODE128
        case .code39: ZBAR_CODE39
        case .code93: ZBAR_CODE93
        case .i25: ZBAR_I25
        case .codabar: ZBAR_CODABAR
        case .databar: ZBAR_DATABAR
        case .databarExpanded: ZBAR_DATABAR_EXP
        }
    }

    static let byZBarType: [UInt32: MetadataObjectType] =
        Dictionary(uniqueKeysWithValues: MetadataObjectType.allCases.map { (zbarType($0).rawValue, $0) })

    /// The codes of `types` in a luma plane of `width`×`height` with rows `stride` bytes apart.
    public func scan(_ luma: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int,
                     types: Set<MetadataObjectType>) -> [DetectedCode] {
        guard !types.isEmpty, width > 0, height > 0, luma.count >= stride * (height - 1) + width else { return [] }
        if types != enabled {
            for t in MetadataObjectType.allCases {
                zbar_image_scanner_set_config(scanner, Self.zbarType(t), ZBAR_CFG_ENABLE, types.contains(t) ? 1 : 0)
            }
            enabled = types
        }
        // zbar wants rows packed: copy when the plane is padded.
        var packed: [UInt8] = []
        let base: UnsafeRawPointer
        if stride == width {
            base = luma.baseAddress!
        } else {
            packed = [UInt8](repeating: 0, count: width * height)
            packed.withUnsafeMutableBytes { dst in
                for y in 0..<height { (dst.baseAddress! + y * width).copyMemory(from: luma.baseAddress! + y * stride, byteCount: width) }
            }
            base = packed.withUnsafeBytes { $0.baseAddress! }
        }
        guard let image = zbar_image_create() else { return [] }
        defer { zbar_image_destroy(image) }
        zbar_image_set_format(image, 0x3030_3859)  // "Y800", little-endian fourcc
        zbar_image_set_size(image, UInt32(width), UInt32(height))
        return withExtendedLifetime(packed) {
            zbar_image_set_data(image, base, UInt(width * height), nil)  // borrowed: no cleanup
            guard zbar_scan_image(scanner, image) > 0 else { return [] }
            var found: [DetectedCode] = []
            var symbol = zbar_image_first_symbol(image)
            while let s = symbol {
                defer { symbol = zbar_symbol_next(s) }
                guard let type = Self.byZBarType[zbar_symbol_get_type(s).rawValue], let data = zbar_symbol_get_data(s) else { continue }
                let n = Int(zbar_symbol_get_data_length(s))
                let value = [UInt8](UnsafeRawBufferPointer(start: data, count: n))
                let corners = (0..<zbar_symbol_get_loc_size(s)).map { i in
                    (x: Double(zbar_symbol_get_loc_x(s, i)), y: Double(zbar_symbol_get_loc_y(s, i)))
                }
                found.append(DetectedCode(type: type, value: value, corners: corners))
            }
            return found
        }
    }
}
