// EAN-13 (ISO/IEC 15420) and Code 128 set B (ISO/IEC 15417), laid out from their tables.

import CameraCore

extension Symbol {
    /// Left-half digits with odd parity (L); G is R reversed, R is L inverted.
    static let eanL = ["0001101", "0011001", "0010011", "0111101", "0100011",
                       "0110001", "0101111", "0111011", "0110111", "0001011"]
    /// Which of the left six digits take G, by the first digit (which is encoded by this alone).
    static let eanParity = ["LLLLLL", "LLGLGG", "LLGGLG", "LLGGGL", "LGLLGG",
                            "LGGLLG", "LGGGLL", "LGLGLG", "LGLGGL", "LGGLGL"]

    /// The check digit of twelve digits: weights 1, 3, 1, 3… from the left.
    static func eanCheckDigit(_ digits: [Int]) -> Int {
        let sum = digits.enumerated().reduce(0) { $0 + $1.element * ($1.offset % 2 == 0 ? 1 : 3) }
        return (10 - sum % 10) % 10
    }

    /// Twelve digits (the check digit is added) or thirteen (it must be right).
    static func ean13(_ value: String) throws(SymbolError) -> ModuleGrid {
        // ASCII digits by their bytes: a digit with a combining mark is one Character that
        // compares like the digit, and must not get through.
        let bytes = Array(value.utf8)
        guard bytes.count == 12 || bytes.count == 13, bytes.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw .invalidValue(.ean13, "12 or 13 digits")
        }
        var d = bytes.map { Int($0 - 0x30) }
        let check = eanCheckDigit(Array(d.prefix(12)))
        if d.count == 13 && d[12] != check { throw .invalidValue(.ean13, "the check digit of \(value.prefix(12)) is \(check)") }
        if d.count == 12 { d.append(check) }
        func r(_ n: Int) -> String { String(eanL[n].map { $0 == "0" ? "1" : "0" }) }
        var bits = "101"
        for (i, kind) in eanParity[d[0]].enumerated() {
            bits += kind == "L" ? eanL[d[i + 1]] : String(r(d[i + 1]).reversed())
        }
        bits += "01010"
        for n in d[7...12] { bits += r(n) }
        bits += "101"
        let quiet = [Bool](repeating: false, count: 11)
        let dark = quiet + bits.map { $0 == "1" } + quiet
        return ModuleGrid(width: dark.count, height: 1, dark: dark)
    }

    /// Bar and space widths of Code 128's symbols 0…105, and the stop (106).
    static let code128Widths = [
        "212222", "222122", "222221", "121223", "121322", "131222", "122213", "122312", "132212", "221213",
        "221312", "231212", "112232", "122132", "122231", "113222", "123122", "123221", "223211", "221132",
        "221231", "213212", "223112", "312131", "311222", "321122", "321221", "312212", "322112", "322211",
        "212123", "212321", "232121", "111323", "131123", "131321", "112313", "132113", "132311", "211313",
        "231113", "231311", "112133", "112331", "132131", "113123", "113321", "133121", "313121", "211331",
        "231131", "213113", "213311", "213131", "311123", "311321", "331121", "312113", "312311", "332111",
        "314111", "221411", "431111", "111224", "111422", "121124", "121421", "141122", "141221", "112214",
        "112412", "122114", "122411", "142112", "142211", "241211", "221114", "413111", "241112", "134111",
        "111242", "121142", "121241", "114212", "124112", "124211", "411212", "421112", "421211", "212141",
        "214121", "412121", "111143", "111341", "131141", "114113", "114311", "411113", "411311", "113141",
        "114131", "311141", "411131", "211412", "211214", "211232", "2331112",
    ]

    /// Printable ASCII in code set B: start B, the characters, the mod-103 check, stop.
    static func code128(_ value: String) throws(SymbolError) -> ModuleGrid {
        let bytes = Array(value.utf8)
        guard (1...80).contains(bytes.count), bytes.allSatisfy({ (32...126).contains($0) }) else {
            throw .invalidValue(.code128, "1 to 80 printable ASCII characters")
        }
        let startB = 104, stop = 106
        let values = bytes.map { Int($0) - 32 }
        let check = (startB + values.enumerated().reduce(0) { $0 + ($1.offset + 1) * $1.element }) % 103
        let symbols = [startB] + values + [check, stop]
        return bars(symbols.flatMap { code128Widths[$0].map { Int(String($0))! } }, quiet: 10)
    }
}
