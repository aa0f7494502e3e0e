import Barcodes
import CameraCore
import Metadata
import Testing

/// What the scene draws, zbar reads: each drawable type round-trips through a luma plane,
/// and the types filter is zbar's own configuration.
@Suite struct SymbolRoundTripTests {
    /// A white plane with `grid` drawn at `scale` pixels a module (1D codes 60 px tall) at (x0, y0).
    func plane(_ grids: [(ModuleGrid, x0: Int, y0: Int)], width: Int = 640, height: Int = 480, scale: Int = 3) -> [UInt8] {
        var p = [UInt8](repeating: 235, count: width * height)
        for (grid, x0, y0) in grids {
            let rowsPerModule = grid.height == 1 ? 60 : scale
            for gy in 0..<grid.height * rowsPerModule {
                for gx in 0..<grid.width * scale where grid[gx / scale, gy / rowsPerModule] {
                    p[(y0 + gy) * width + x0 + gx] = 16
                }
            }
        }
        return p
    }

    func scan(_ p: [UInt8], _ types: Set<MetadataObjectType>, width: Int = 640, height: Int = 480) -> [DetectedCode] {
        p.withUnsafeBytes { CodeScanner().scan($0, width: width, height: height, stride: width, types: types) }
    }

    @Test(arguments: [(MetadataObjectType.qr, "hello"), (.qr, "https://example.com/ä?x=1"), (.ean13, "4006381333931"),
                      (.ean13, "590123412345"), (.code128, "Viewfinder-128"), (.code128, "a b c ~{}")])
    func drawnCodesAreRead(_ type: MetadataObjectType, _ value: String) throws {
        let grid = try Symbol.grid(type, value)
        let found = scan(plane([(grid, 40, 40)]), [type])
        let expected = type == .ean13 && value.count == 12 ? value + "7" : value  // 590123412345 + its check digit
        #expect(found.map(\.type) == [type])
        #expect(found.first.map { String(decoding: $0.value, as: UTF8.self) } == expected)
        #expect((found.first?.corners.count ?? 0) >= 2)
    }

    @Test func twoCodesAtOnceAndTheTypesFilter() throws {
        let p = plane([(try Symbol.grid(.qr, "left"), 20, 20), (try Symbol.grid(.ean13, "4006381333931"), 300, 300)])
        #expect(Set(scan(p, [.qr, .ean13]).map { String(decoding: $0.value, as: UTF8.self) }) == ["left", "4006381333931"])
        #expect(scan(p, [.ean13]).map(\.type) == [.ean13])
        #expect(scan(p, [.code128]).isEmpty)
        #expect(scan(p, []).isEmpty)
    }

    @Test func qrCornersAreWhereItIsDrawn() throws {
        let grid = try Symbol.grid(.qr, "where")
        let found = scan(plane([(grid, 100, 50)]), [.qr])
        let c = try #require(found.first?.corners)
        let quiet = 4 * 3
        #expect(abs(c.map(\.x).min()! - Double(100 + quiet)) <= 3 && abs(c.map(\.y).min()! - Double(50 + quiet)) <= 3, "\(c)")
        #expect(abs(c.map(\.x).max()! - Double(100 + grid.width * 3 - quiet)) <= 3, "\(c)")
    }

    @Test func badValuesAreRefused() {
        #expect(throws: SymbolError.self) { try Symbol.grid(.ean13, "12345") }
        #expect(throws: SymbolError.self) { try Symbol.grid(.ean13, "4006381333932") }
        #expect(throws: SymbolError.self) { try Symbol.grid(.code128, "é") }
        #expect(throws: SymbolError.self) { try Symbol.grid(.upca, "012345678905") }
        // A digit with a combining accent is one Character that compares like the digit:
        // refused by its bytes (it was read as a digit and crashed the server).
        #expect(throws: SymbolError.self) { try Symbol.grid(.ean13, "1\u{301}23456789012") }
        #expect(throws: SymbolError.self) { try Symbol.grid(.ean13, "１23456789012") }  // a fullwidth digit
    }
}
