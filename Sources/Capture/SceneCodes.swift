// Codes the synthetic camera can show, so the metadata output has something real to read
// (seed 001's test double). They are drawn into the scene before the simulated lens, so an
// out-of-focus lens blurs them as it blurs everything else, and they go through the same
// zoom, rotation and mirror as the rest of the picture.

import Barcodes
import CameraCore

/// A code in the scene: its centre (x, y) normalised in the frame, its height a fraction of
/// the frame's height (a 1D code is twice as wide as it is tall).
public struct SceneCode: Sendable, Codable, Equatable {
    public var type: MetadataObjectType
    public var value: String
    public var x: Double
    public var y: Double
    public var size: Double

    public init(type: MetadataObjectType, value: String, x: Double, y: Double, size: Double) {
        self.type = type
        self.value = value
        self.x = x
        self.y = y
        self.size = size
    }
}

/// A scene code with its modules laid out, ready to draw at any frame size.
struct PlacedCode: Sendable {
    /// Its top-left corner and size in pixels in a `width`×`height` frame.
    private func geometry(width: Int, height: Int) -> (x0: Double, y0: Double, w: Double, h: Double) {
        let h = code.size * Double(height)
        let w = grid.height == 1 ? 2 * h : h * Double(grid.width) / Double(grid.height)
        return (code.x * Double(width) - w / 2, code.y * Double(height) - h / 2, w, h)
    }

    /// Every pixel `draw` writes, grown to pixel pairs.
    func bounds(width: Int, height: Int) -> PixelRect {
        let (x0, y0, w, h) = geometry(width: width, height: height)
        return PixelRect(x0: Int(x0.rounded()), y0: Int(y0.rounded()), x1: Int((x0 + w).rounded()), y1: Int((y0 + h).rounded()),
                         clippedTo: width, height)
    }

    let code: SceneCode
    let grid: ModuleGrid

    init(_ code: SceneCode) throws(SymbolError) {
        guard [code.x, code.y, code.size].allSatisfy(\.isFinite), (0...1).contains(code.x), (0...1).contains(code.y),
              code.size > 0, code.size <= 1 else {
            throw .invalidValue(code.type, "x and y are within 0…1 and size within 0…1 (above 0)")
        }
        self.code = code
        grid = try Symbol.grid(code.type, code.value)
    }

    /// Draws the code's modules: dark at Y 16, light at Y 235, neutral chroma (pixel exact,
    /// not snapped to pixel pairs: a bar one pixel too wide would be another digit).
    func draw(into c: YUYVCanvas) {
        let (x0, y0, w, h) = geometry(width: c.width, height: c.height)
        let left = max(0, Int(x0.rounded())), right = min(c.width, Int((x0 + w).rounded()))
        let top = max(0, Int(y0.rounded())), bottom = min(c.height, Int((y0 + h).rounded()))
        guard left < right, top < bottom else { return }
        // The grid cell under a pixel's centre, along one axis (types spelled out: inferred,
        // these expressions cost the type checker most of a second each).
        func cell(_ pixel: Int, _ origin: Double, _ extent: Double, _ cells: Int) -> Int {
            let at: Double = (Double(pixel) + 0.5 - origin) / extent * Double(cells)
            return min(cells - 1, max(0, Int(at)))
        }
        let columns: [Int] = (left..<right).map { cell($0, x0, w, grid.width) }
        for py in top..<bottom {
            let gy = grid.height == 1 ? 0 : cell(py, y0, h, grid.height)
            let row = c.base + py * c.stride
            for (i, px) in (left..<right).enumerated() {
                row[px * 2] = grid[columns[i], gy] ? 16 : 235
                row[(px * 2) | 1] = 128  // U or V: the code is grey
            }
        }
    }
}
