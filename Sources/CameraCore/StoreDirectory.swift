// The directory a store (photos, movies) files its outputs in: the one shared state of the
// store, so renames, deletions and listings take turns on it; made on the first write; listed
// by id (a file's name less its suffix, kept only if it is a valid id).

import Foundation
import SystemSupport

public final class StoreDirectory: Sendable {
    public let path: String
    private let turn = Locked(())

    public init(_ path: String) { self.path = path }

    /// `name`'s path in the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    /// Runs `body` while no other rename, deletion or listing of this store runs.
    public func withTurn<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try turn.withLock { _ throws(E) in try body() }
    }

    /// Makes the directory (and its parents, 0755) if it is not there; errno read at the
    /// mkdir that failed.
    public func ensure() throws(SystemError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            prefix += "/" + part
            do throws(SystemError) { try Sys.mkdir(prefix, mode: 0o755) } catch where error.errno == EEXIST {}
        }
        let st = try Sys.stat(path)
        guard (st.st_mode & S_IFMT) == S_IFDIR else { throw SystemError(call: "mkdir \(path)", errno: ENOTDIR) }
    }

    /// Every name in the directory (none when it is not there yet).
    public func names() -> [String] { (try? Sys.directoryEntries(path)) ?? [] }

    /// The ids of the files named `ID` + `suffix` that `isValid` accepts.
    public func ids(suffix: String, isValid: (String) -> Bool) -> [String] {
        names().compactMap { $0.hasSuffix(suffix) ? String($0.dropLast(suffix.count)) : nil }.filter(isValid)
    }
}

extension StoredName {
    /// Reads an id of `numbers` numbers and an optional camera, dash-separated
    /// (`MICROS-SEQUENCE-CAMERA` for a photo, `MICROS-CAMERA` for a movie): the first number is
    /// the time in microseconds, the camera is a safe one. Nil for anything else, so nothing
    /// that parses can name a file outside its directory.
    public static func parse(_ id: String, numbers: Int) -> (micros: Int64, camera: String?)? {
        let parts = id.split(separator: "-", maxSplits: numbers, omittingEmptySubsequences: false)
        guard parts.count >= numbers, parts.prefix(numbers).allSatisfy(isNumber), let micros = Int64(parts[0]) else { return nil }
        guard parts.count == numbers + 1 else { return (micros, nil) }
        let camera = String(parts[numbers])
        guard isSafe(camera: camera) else { return nil }
        return (micros, camera)
    }
}

/// A stored movie or photo as retention sees it: when it was taken, what it takes on disk,
/// and whether the user keeps it.
public struct StoredEntry: Sendable, Equatable {
    public var id: String
    public var camera: String?
    /// Unix seconds (from the id).
    public var time: Double
    public var bytes: Int64
    public var keep: Bool

    public init(id: String, camera: String?, time: Double, bytes: Int64, keep: Bool) {
        self.id = id
        self.camera = camera
        self.time = time
        self.bytes = bytes
        self.keep = keep
    }
}
