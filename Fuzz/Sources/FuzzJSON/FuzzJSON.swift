// libFuzzer target: request bodies, through the strict JSON reader every POST handler uses
// (JSONValue.parse, then JSONObjectReader field by field, then finish()).
//
// Input: the body, as sent.
//
// Invariants beyond "no crash":
//  - parse → encoded → parse gives the same value (when every number is finite; a literal
//    too large for a Double reads as ±infinity, which JSONObjectReader refuses), and
//    encoded is a fixed point: encoding the re-parsed value gives the same bytes.
//  - JSONObjectReader's typed accessors return only what the value holds: a string only for
//    a string, an int only for a whole finite number inside the range asked for, a double
//    only when finite; every error names the key path; finish() throws exactly when a key
//    was left unread, naming the first one in sorted order.

import JSON

private func allFinite(_ v: JSONValue) -> Bool {
    switch v {
    case .number(let n): n.isFinite
    case .array(let a): a.allSatisfy(allFinite)
    case .object(let o): o.values.allSatisfy(allFinite)
    default: true
    }
}

/// Byte-exact equality (String's == is Unicode canonical equivalence; the wire is bytes).
private func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case (.null, .null): return true
    case (.bool(let x), .bool(let y)): return x == y
    case (.number(let x), .number(let y)): return x == y || (x.isNaN && y.isNaN)
    case (.string(let x), .string(let y)): return Array(x.utf8) == Array(y.utf8)
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(same)
    case (.object(let x), .object(let y)):
        guard x.count == y.count else { return false }
        for (k, v) in x {
            guard let (k2, w) = y.first(where: { Array($0.key.utf8) == Array(k.utf8) }), k2 == k, same(v, w) else { return false }
        }
        return true
    default: return false
    }
}

/// A small deterministic choice stream from the input, so the accessors vary with it.
private struct Chooser {
    var state: UInt64
    mutating func next(_ n: Int) -> Int {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return Int((state >> 33) % UInt64(n))
    }
}

private func exercise(_ value: JSONValue, path: String, depth: Int, _ ch: inout Chooser) {
    guard case .object(let o) = value else {
        do { _ = try JSONObjectReader(value, path: path); preconditionFailure("a reader over \(value.typeName)") }
        catch { precondition(error.path == path) }
        return
    }
    let r = try! JSONObjectReader(value, path: path)
    precondition(r.path == path)
    let keys = o.keys.sorted()
    var skipped: [String] = []
    for k in keys {
        let full = path.isEmpty ? k : "\(path).\(k)"
        let v = o[k]!
        precondition(r.has(k))
        if ch.next(8) == 0 { skipped.append(k); continue }
        do throws(JSONFieldError) {
            switch ch.next(6) {
            case 0:
                if let s = try r.string(k) { guard case .string(let t) = v, t == s else { preconditionFailure("string(\(full))") } }
                else { precondition(v == .null) }
            case 1:
                if let b = try r.bool(k) { precondition(v == .bool(b), "bool(\(full))") } else { precondition(v == .null) }
            case 2:
                if let d = try r.double(k) {
                    precondition(d.isFinite && v == .number(d), "double(\(full))")
                } else { precondition(v == .null) }
            case 3:
                let lo = ch.next(3) == 0 ? Int.min : -ch.next(1000), hi = ch.next(3) == 0 ? Int.max : ch.next(100_000)
                let range = lo...max(lo, hi)
                if let i = try r.int(k, in: range) {
                    precondition(range.contains(i) && v == .number(Double(i)), "int(\(full)) = \(i) from \(v)")
                } else { precondition(v == .null) }
            case 4:
                if let sub = try r.object(k) {
                    precondition(sub.path == full)
                    if depth < 8 { exercise(v, path: full, depth: depth + 1, &ch) }
                } else { precondition(v == .null) }
            default:
                let got = r.value(k)
                precondition(got == (v == .null ? nil : v), "value(\(full))")
            }
        } catch {
            precondition(error.path == full, "error at \(error.path) for \(full): \(error.problem)")
            precondition(!error.description.isEmpty)
        }
    }
    do throws(JSONFieldError) {
        try r.finish()
        precondition(skipped.isEmpty, "finish() passed with \(skipped) unread")
    } catch {
        let first = skipped.sorted().first
        precondition(first.map { error.path == (path.isEmpty ? $0 : "\(path).\($0)") } ?? false,
                     "finish(): \(error) with unread \(skipped)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size <= 65536 else { return 0 }  // the server's body limit
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let value = try? JSONValue.parse(bytes) else { return 0 }
    let encoded = value.encoded()
    if allFinite(value) {
        guard let again = try? JSONValue.parse(encoded) else {
            preconditionFailure("encoded() is not JSON: \(String(decoding: encoded, as: UTF8.self))")
        }
        precondition(same(value, again), "round trip: \(value) → \(String(decoding: encoded, as: UTF8.self)) → \(again)")
        precondition(again.encoded() == encoded, "encoded() is not a fixed point")
    }
    var ch = Chooser(state: UInt64(truncatingIfNeeded: bytes.reduce(UInt64(size)) { $0 &* 31 &+ UInt64($1) }))
    exercise(value, path: "", depth: 0, &ch)
    return 0
}
