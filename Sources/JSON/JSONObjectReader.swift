// Reads a JSON object field by field with strict types, and refuses keys nobody read, so
// typos surface. Errors name the full key path ("server.port"). Used for config.json and
// for request bodies alike; they differ in what null means (see `nullIsAbsent`).

public struct JSONFieldError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var problem: String
    public var description: String { path.isEmpty ? problem : "\(path): \(problem)" }

    public init(path: String, problem: String) {
        self.path = path
        self.problem = problem
    }
}

public final class JSONObjectReader {
    public let path: String
    /// config.json spells "the default" as null (`"camera": null`), so there a null key reads
    /// as absent. A request body's null is refused as the wrong type: the API's schema has a
    /// type for every key, and a key that takes null (rectOfInterest) reads it with `value`.
    /// Objects read from this one inherit it.
    public let nullIsAbsent: Bool
    private let object: [String: JSONValue]
    private var read: Set<String> = []

    public init(_ value: JSONValue, path: String = "", nullIsAbsent: Bool = true) throws(JSONFieldError) {
        guard case .object(let o) = value else {
            throw JSONFieldError(path: path, problem: "expected an object, found \(value.typeName)")
        }
        self.path = path
        self.nullIsAbsent = nullIsAbsent
        object = o
    }

    private func key(_ k: String) -> String { path.isEmpty ? k : "\(path).\(k)" }

    /// The raw value, or nil when absent or null (for a key that takes null itself).
    public func value(_ k: String) -> JSONValue? {
        read.insert(k)
        guard let v = object[k], v != .null else { return nil }
        return v
    }

    /// A key's value of any type (a list, say): nil when absent; null is absent or refused
    /// (`nullIsAbsent`), as for the typed keys.
    public func any(_ k: String, expected: String) throws(JSONFieldError) -> JSONValue? { try present(k, expected: expected) }

    /// Whether the key is there at all, null included (for a key whose null means something).
    public func contains(_ k: String) -> Bool {
        read.insert(k)
        return object[k] != nil
    }

    /// The value of a typed key: nil when absent; null is absent or refused (`nullIsAbsent`).
    private func present(_ k: String, expected: String) throws(JSONFieldError) -> JSONValue? {
        read.insert(k)
        guard let v = object[k] else { return nil }
        guard v != .null else {
            if nullIsAbsent { return nil }
            throw JSONFieldError(path: key(k), problem: "expected \(expected), found null (leave the key out instead)")
        }
        return v
    }

    public func has(_ k: String) -> Bool { object[k] != nil }

    public func string(_ k: String, allowed: [String]? = nil) throws(JSONFieldError) -> String? {
        guard let v = try present(k, expected: "a string") else { return nil }
        guard case .string(let s) = v else { throw JSONFieldError(path: key(k), problem: "expected a string, found \(v.typeName)") }
        if let allowed, !allowed.contains(s) {
            throw JSONFieldError(path: key(k), problem: "'\(s)' is not one of \(allowed.joined(separator: ", "))")
        }
        return s
    }

    public func bool(_ k: String) throws(JSONFieldError) -> Bool? {
        guard let v = try present(k, expected: "true or false") else { return nil }
        guard case .bool(let b) = v else { throw JSONFieldError(path: key(k), problem: "expected true or false, found \(v.typeName)") }
        return b
    }

    /// A finite number (JSON has no NaN or Infinity; huge literals overflow to infinity and are refused).
    public func double(_ k: String) throws(JSONFieldError) -> Double? {
        guard let v = try present(k, expected: "a number") else { return nil }
        guard case .number(let n) = v else { throw JSONFieldError(path: key(k), problem: "expected a number, found \(v.typeName)") }
        guard n.isFinite else { throw JSONFieldError(path: key(k), problem: "must be a finite number") }
        return n
    }

    /// A finite number inside `range` (a value outside is refused, not clamped: the caller
    /// asked for something that does not exist, e.g. a point of interest off the picture).
    public func double(_ k: String, in range: ClosedRange<Double>) throws(JSONFieldError) -> Double? {
        guard let n = try double(k) else { return nil }
        guard range.contains(n) else {
            throw JSONFieldError(path: key(k), problem: "\(n) is outside \(range.lowerBound)…\(range.upperBound)")
        }
        return n
    }

    public func int(_ k: String, in range: ClosedRange<Int>? = nil) throws(JSONFieldError) -> Int? {
        guard let n = try double(k) else { return nil }
        guard n == n.rounded(), abs(n) < 1e15 else { throw JSONFieldError(path: key(k), problem: "expected a whole number, found \(n)") }
        let i = Int(n)
        if let range, !range.contains(i) {
            throw JSONFieldError(path: key(k), problem: "\(i) is outside \(range.lowerBound)…\(range.upperBound)")
        }
        return i
    }

    public func object(_ k: String) throws(JSONFieldError) -> JSONObjectReader? {
        guard let v = try present(k, expected: "an object") else { return nil }
        return try JSONObjectReader(v, path: key(k), nullIsAbsent: nullIsAbsent)
    }

    /// An object, or nil when absent or null (for a key whose null means "none").
    public func nullableObject(_ k: String) throws(JSONFieldError) -> JSONObjectReader? {
        guard let v = value(k) else { return nil }
        return try JSONObjectReader(v, path: key(k), nullIsAbsent: nullIsAbsent)
    }

    /// Throws for the first key that no accessor asked for.
    public func finish() throws(JSONFieldError) {
        if let unknown = object.keys.sorted().first(where: { !read.contains($0) }) {
            throw JSONFieldError(path: key(unknown), problem: "unknown key")
        }
    }
}
