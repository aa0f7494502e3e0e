// Base64 for Basic's `user:password` (RFC 7617), strict: anything else is malformed.

import Foundation

enum Base64 {
    static func decode(_ s: String) -> [UInt8]? {
        guard let d = Data(base64Encoded: s) else { return nil }
        return [UInt8](d)
    }
}
