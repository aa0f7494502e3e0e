// The photo output's store: JPEGs in one directory, written atomically (temp file, fsync,
// rename, fsync of the directory) before the capture call answers. Ids are
// `MICROSECONDS-SEQUENCE`, digits and one dash only, so an id can never name a path.

import CameraCore
import Foundation
import JPEG
import SystemSupport

public struct PhotoInfo: Sendable, Codable, Equatable {
    public var id: String
    public var bytes: Int
    public var width: Int
    public var height: Int
    /// ISO 8601, UTC, milliseconds.
    public var capturedAt: String
    /// The camera that took it (nil for photos stored before cameras were recorded).
    public var camera: String?
    /// Kept by the user: retention never deletes it.
    public var keep = false
    /// The capture time in Unix seconds, to the microsecond (X-Capture-Timestamp's).
    public var timestamp: Double = 0
    /// A synchronized capture's set and the moment it asked for (a fleet's photos).
    public var set: String? = nil
    public var at: Double? = nil
}

/// The set a photo belongs to, and the moment the set was taken at.
public struct PhotoSetMark: Sendable, Equatable {
    public var set: String
    public var at: Double
    public init(set: String, at: Double) {
        self.set = set
        self.at = at
    }
}


/// A photo that could not be stored: the directory, the disk or the rename failed.
public struct PhotoStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public var cause: SystemError
    public var description: String { cause.description }
}

public final class PhotoStore: Sendable {
    private let files: StoreDirectory
    public var directory: String { files.path }

    public init(directory: String) {
        files = StoreDirectory(directory)
    }

    /// `MICROS-SEQUENCE` or `MICROS-SEQUENCE-CAMERA`: the time taken, the frame, and the camera
    /// that took it (letters, digits, `_`, `.` and `-`, not starting with a dot), so the file
    /// name alone tells all three and nothing in it can leave the directory.
    public static func isValid(id: String) -> Bool { parse(id) != nil }

    static func parse(_ id: String) -> (micros: Int64, camera: String?)? { StoredName.parse(id, numbers: 2) }

    /// A camera id that can be part of a photo id as it is.
    public static func isValid(camera: String) -> Bool { StoredName.isSafe(camera: camera) }

    /// Stores `frame`, taken by `camera` (recorded in the id when it is a plain name).
    /// A set's photo gets `ID.set` beside it (the set and its moment), written after the photo.
    public func save(_ frame: EncodedFrame, camera: String? = nil, mark: PhotoSetMark? = nil) throws(PhotoStoreError) -> PhotoInfo {
        let micros = Int64((frame.timestamp * 1_000_000).rounded())
        var id = "\(micros)-\(frame.sequence)"
        let recorded = camera.flatMap { Self.isValid(camera: $0) ? $0 : nil }
        if let recorded { id += "-" + recorded }
        do throws(SystemError) {
            try store(frame, id: id)
            if let mark {
                try files.withTurn { () throws(SystemError) in
                    try AtomicFile.write(Array("\(mark.set)\n\(mark.at)\n".utf8), to: markPath(id), temporary: files.file(".tmp-" + id + ".set"), mode: 0o644)
                }
            }
        } catch { throw PhotoStoreError(cause: error) }
        return PhotoInfo(id: id, bytes: frame.jpegCount, width: frame.width,
                         height: frame.height, capturedAt: Self.iso(frame.timestamp), camera: recorded,
                         timestamp: Double(micros) / 1_000_000, set: mark?.set, at: mark?.at)
    }

    /// The photos of one synchronized set, oldest first.
    public func list(set: String) -> [PhotoInfo] {
        files.ids(suffix: ".set", isValid: Self.isValid(id:)).filter { self.mark($0)?.set == set }.compactMap(info)
            .sorted { ($0.timestamp, $0.id) < ($1.timestamp, $1.id) }
    }

    private func mark(_ id: String) -> PhotoSetMark? {
        guard let data = try? Sys.readFile(markPath(id)) else { return nil }
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
        guard lines.count == 2, let at = Double(lines[1]) else { return nil }
        return PhotoSetMark(set: String(lines[0]), at: at)
    }

    private func store(_ frame: EncodedFrame, id: String) throws(SystemError) {
        try files.withTurn { () throws(SystemError) in
            try files.ensure()
            // `.tmp-` names are removed at start-up: a crash leaves a whole photo or none.
            try AtomicFile.write(frame.jpeg, to: path(id), temporary: files.file(".tmp-" + id), mode: 0o644)
        }
    }

    /// Removes the temporary files of saves a crash interrupted (before their rename: never
    /// answered, never listed); called once at start-up, while nothing saves. The names removed.
    @discardableResult
    public func removeUnfinished() -> [String] {
        files.withTurn { files.names().filter { $0.hasPrefix(".tmp-") && (try? Sys.unlink(files.file($0))) != nil } }
    }

    /// Newest first.
    public func list() -> [PhotoInfo] {
        files.ids(suffix: ".jpg", isValid: Self.isValid(id:)).compactMap(info).sorted { ($0.capturedAt, $0.id) > ($1.capturedAt, $1.id) }
    }

    public func read(_ id: String) -> [UInt8]? {
        guard Self.isValid(id: id) else { return nil }
        return try? Sys.readFile(path(id))
    }

    public func delete(_ id: String) -> Bool {
        guard Self.isValid(id: id) else { return false }
        return files.withTurn {
            let gone = (try? Sys.unlink(path(id))) != nil
            if gone {  // the photo is what counts: a mark already gone is fine
                try? Sys.unlink(keepPath(id))
                try? Sys.unlink(markPath(id))
            }
            return gone
        }
    }

    /// Marks a photo kept (an empty `ID.keep` beside it: retention never deletes it) or not.
    public func setKeep(_ id: String, _ keep: Bool) -> PhotoInfo? {
        guard Self.isValid(id: id), Sys.exists(path(id)) else { return nil }
        files.withTurn {
            let mark = keepPath(id)
            if keep {
                if let fd = try? Sys.open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, mode: 0o644) { try? Sys.close(fd, mark) }
            } else {
                try? Sys.unlink(mark)  // not kept already: nothing to remove
            }
        }
        return info(id)
    }

    /// Every photo, cheaply (no decode): its time, size and whether it is kept.
    public func retentionEntries() -> [StoredEntry] {
        let names = Set(files.names())
        return names.compactMap { name -> StoredEntry? in
            guard name.hasSuffix(".jpg") else { return nil }
            let id = String(name.dropLast(4))
            guard let parsed = Self.parse(id) else { return nil }
            guard let st = try? Sys.stat(files.file(name)) else { return nil }
            return StoredEntry(id: id, camera: parsed.camera, time: Double(parsed.micros) / 1e6, bytes: Int64(st.st_size),
                               keep: names.contains(id + ".keep"))
        }
    }

    private func info(_ id: String) -> PhotoInfo? {
        guard let bytes = read(id), let size = try? JPEGDecoder.size(of: bytes), let parsed = Self.parse(id) else { return nil }
        let mark = mark(id)
        return PhotoInfo(id: id, bytes: bytes.count, width: size.width,
                         height: size.height, capturedAt: Self.iso(Double(parsed.micros) / 1_000_000), camera: parsed.camera,
                         keep: Sys.exists(keepPath(id)), timestamp: Double(parsed.micros) / 1_000_000,
                         set: mark?.set, at: mark?.at)
    }

    private func path(_ id: String) -> String { files.file(id + ".jpg") }
    private func keepPath(_ id: String) -> String { files.file(id + ".keep") }
    private func markPath(_ id: String) -> String { files.file(id + ".set") }

    static func iso(_ t: Double) -> String { StoredName.iso8601(t) }
}
