// A machine-readable timecode in the synthetic camera's picture, so any client can measure
// glass-to-glass latency in decoded pixels (issue 27): the top `rows(height:)` pixel rows are
// 64 equal cells across the full width — cell 0 white and cell 1 black (the reference levels),
// cells 2–49 the frame's capture time in whole milliseconds since the Unix epoch (48 bits,
// most significant first, white = 1), cells 50–63 the low 14 bits of the frame's sequence.
// Drawn into the raw frame, so zoom and orientation move it with the picture; read back by
// `read`, from any decoded picture of an unzoomed, unturned frame.

public enum Timecode {
    public static let cells = 64
    static let timeBits = 48, sequenceBits = 14

    /// How many pixel rows the cells take: max(8, height / 45).
    public static func rows(height: Int) -> Int { max(8, height / 45) }

    /// The cells' bits for a frame exposed at `milliseconds` with camera sequence `sequence`.
    static func bits(milliseconds: UInt64, sequence: UInt64) -> [Bool] {
        var out = [true, false]
        for i in (0..<timeBits).reversed() { out.append(milliseconds >> UInt64(i) & 1 == 1) }
        for i in (0..<sequenceBits).reversed() { out.append(sequence >> UInt64(i) & 1 == 1) }
        return out
    }

    /// Cell `i`'s columns [x0, x1): the width divided as evenly as whole pixels allow.
    static func columns(_ i: Int, width: Int) -> (Int, Int) { (i * width / cells, (i + 1) * width / cells) }

    /// Draws the cells on the top rows of `canvas`.
    public static func draw(on canvas: YUYVCanvas, milliseconds: UInt64, sequence: UInt64) {
        let rows = min(rows(height: canvas.height), canvas.height)
        for (i, bit) in bits(milliseconds: milliseconds, sequence: sequence).enumerated() {
            let (x0, x1) = columns(i, width: canvas.width)
            canvas.fill(x: x0, y: 0, width: x1 - x0, height: rows, bit ? .white : .black)
        }
    }

    /// Reads the cells from a decoded picture's luma (`luma(x, y)`, 0…255): each cell sampled
    /// in its middle half, compared with the midpoint of the two reference cells. Nil when the
    /// references are not white over black (no timecode there, or a turned picture).
    public static func read(width: Int, height: Int, luma: (_ x: Int, _ y: Int) -> Int) -> (milliseconds: UInt64, sequence: UInt64)? {
        let rows = rows(height: height)
        guard width >= cells * 2, height > rows else { return nil }
        func level(_ i: Int) -> Int {
            let (x0, x1) = columns(i, width: width)
            let xa = x0 + (x1 - x0) / 4, xb = max(xa + 1, x1 - (x1 - x0) / 4)
            let ya = rows / 4, yb = max(ya + 1, rows - rows / 4)
            var sum = 0, n = 0
            for y in ya..<yb { for x in xa..<xb { sum += luma(x, y); n += 1 } }
            return sum / max(1, n)
        }
        let white = level(0), black = level(1)
        guard white - black > 64 else { return nil }
        let mid = (white + black) / 2
        var ms: UInt64 = 0, seq: UInt64 = 0
        for i in 2..<(2 + timeBits) { ms = ms << 1 | (level(i) > mid ? 1 : 0) }
        for i in (2 + timeBits)..<cells { seq = seq << 1 | (level(i) > mid ? 1 : 0) }
        return (ms, seq)
    }
}
