// The movie output's directory. A recording is written as `.ID.mp4.part` (never listed or
// served); when it ends it is renamed `ID.mp4`, with `ID.json` beside it recording what it
// is. A `.part` found at start-up belonged to a recording the server never finished (killed,
// power lost): it is cut back to its last whole fragment and listed as `recovered`.
// Ids are `MICROSECONDS-CAMERA` (or `MICROSECONDS`): nothing in one can leave the directory.

import CameraCore
import Foundation
import SystemSupport

public final class MovieStore: Sendable {
    private let files: StoreDirectory
    public var directory: String { files.path }

    public init(directory: String) {
        files = StoreDirectory(directory)
    }

    // MARK: - Ids and paths

    public static func isValid(id: String) -> Bool { parse(id) != nil }

    static func parse(_ id: String) -> (micros: Int64, camera: String?)? { StoredName.parse(id, numbers: 1) }

    public static func isValid(camera: String) -> Bool { StoredName.isSafe(camera: camera) }

    public func makeID(startedAt: Double, camera: String?) -> String {
        let micros = Int64((startedAt * 1_000_000).rounded())
        guard let camera, Self.isValid(camera: camera) else { return "\(micros)" }
        return "\(micros)-\(camera)"
    }

    public func path(_ id: String) -> String { files.file(id + ".mp4") }
    func partialPath(_ id: String) -> String { files.file("." + id + ".mp4.part") }
    private func recordPath(_ id: String) -> String { files.file(id + ".json") }
    func snapshotPath(_ id: String) -> String { files.file(id + ".jpg") }
    /// Beside a motion movie being written: what started it survives a crash (the repair lists
    /// it as a motion movie).
    private func motionMarkPath(_ id: String) -> String { files.file("." + id + ".motion") }

    /// Marks the recording `id` as a motion event's until it is published.
    func markMotion(_ id: String) {
        let mark = motionMarkPath(id)
        if let fd = try? Sys.open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, mode: 0o644) { try? Sys.close(fd, mark) }
    }

    public static func url(_ id: String) -> String { "/api/movies/" + id }
    public static func snapshotURL(_ id: String) -> String { "/api/movies/" + id + "/snapshot" }

    // MARK: - Writing

    func ensureDirectory() throws(MovieError) {
        do throws(SystemError) { try files.ensure() } catch { throw .system(error) }
    }

    /// Publishes a finished recording: its record first (so a listed movie always has one,
    /// unless the disk was too full for it), then the rename, then the directory made durable.
    func publish(_ info: MovieInfo) throws(MovieError) {
        try files.withTurn { () throws(MovieError) in
            writeRecord(info)
            try MovieError.systemCall { () throws(SystemError) in try Sys.rename(partialPath(info.id), to: path(info.id)) }
            AtomicFile.syncDirectory(of: path(info.id))
            try? Sys.unlink(motionMarkPath(info.id))
        }
    }

    /// Stores a motion movie's snapshot beside it (whole or absent, as photos are).
    public func writeSnapshot(_ id: String, jpeg: [UInt8]) -> Bool {
        guard Self.isValid(id: id) else { return false }
        return files.withTurn {
            (try? AtomicFile.write(jpeg, to: snapshotPath(id), temporary: files.file(".tmp-" + id + ".jpg"), mode: 0o644)) != nil
        }
    }

    /// Marks a movie kept (retention never deletes it) or not; its record, as it now reads.
    public func setKeep(_ id: String, _ keep: Bool) -> MovieInfo? {
        guard var info = info(id) else { return nil }
        info.keep = keep
        files.withTurn { writeRecord(info) }
        return info
    }

    /// The record is a convenience (the file can be probed again): a full disk loses it, not the movie.
    private func writeRecord(_ info: MovieInfo) {
        guard let data = try? JSONEncoder().encode(info) else { return }
        let temp = files.file(".tmp-" + info.id + ".json")
        try? AtomicFile.write([UInt8](data), to: recordPath(info.id), temporary: temp, mode: 0o644)
    }

    // MARK: - Reading

    /// Newest first.
    public func list() -> [MovieInfo] {
        files.ids(suffix: ".mp4", isValid: Self.isValid(id:)).compactMap(info).sorted { ($0.startedAt, $0.id) > ($1.startedAt, $1.id) }
    }

    /// A finished movie's record; probed (and the record written again) if it is missing.
    public func info(_ id: String) -> MovieInfo? {
        guard Self.isValid(id: id) else { return nil }
        guard let st = try? Sys.stat(path(id)) else { return nil }
        if let data = try? Sys.readFile(recordPath(id)),
           var info = try? JSONDecoder().decode(MovieInfo.self, from: Data(data)) {
            info.bytes = Int64(st.st_size)
            return info
        }
        guard let parsed = Self.parse(id), let facts = try? MovieProbe.probe(path(id)) else { return nil }
        let info = MovieInfo(id: id, url: Self.url(id), camera: parsed.camera, codec: facts.codec, width: facts.width,
                             height: facts.height, rotation: facts.rotation, frames: facts.frames, duration: MovieInfo.seconds(facts.duration),
                             bytes: Int64(st.st_size), startedAt: StoredName.iso8601(Double(parsed.micros) / 1e6),
                             reason: .recovered, timelapse: false, audio: facts.audio)
        files.withTurn { writeRecord(info) }
        return info
    }

    /// An open descriptor on the movie and its size, for serving; the caller owns the fd.
    public func openFile(_ id: String) -> (fd: Int32, size: Int64)? {
        guard Self.isValid(id: id) else { return nil }
        return Self.openRegular(path(id))
    }

    /// An open descriptor on a motion movie's snapshot and its size; the caller owns the fd.
    public func openSnapshot(_ id: String) -> (fd: Int32, size: Int64)? {
        guard Self.isValid(id: id) else { return nil }
        return Self.openRegular(snapshotPath(id))
    }

    /// `path` opened for reading and its size; nil when it cannot be opened or is not a regular file.
    private static func openRegular(_ path: String) -> (fd: Int32, size: Int64)? {
        guard let fd = try? Sys.open(path, O_RDONLY | O_CLOEXEC) else { return nil }
        guard let st = try? Sys.fstat(fd, path), (st.st_mode & S_IFMT) == S_IFREG else {
            try? Sys.close(fd, path)
            return nil
        }
        return (fd, Int64(st.st_size))
    }

    public func delete(_ id: String) -> Bool {
        guard Self.isValid(id: id) else { return false }
        return files.withTurn {
            let gone = (try? Sys.unlink(path(id))) != nil
            if gone {  // the movie is what counts: a record or snapshot already gone is fine
                try? Sys.unlink(recordPath(id))
                try? Sys.unlink(snapshotPath(id))
            }
            return gone
        }
    }

    // MARK: - Retention

    /// Every finished movie, cheaply (no probe): its time, size (with its snapshot and
    /// record) and whether it is kept; and the bytes of recordings being written.
    public func retentionEntries() -> (movies: [StoredEntry], writing: Int64) {
        var out: [StoredEntry] = [], writing: Int64 = 0
        for name in files.names() {
            guard let st = try? Sys.stat(files.file(name)) else { continue }
            if name.hasPrefix(".") && name.hasSuffix(".mp4.part") { writing += Int64(st.st_size); continue }
            guard name.hasSuffix(".mp4") else { continue }
            let id = String(name.dropLast(4))
            guard let parsed = Self.parse(id) else { continue }
            var bytes = Int64(st.st_size), keep = false
            if let snapshot = try? Sys.stat(snapshotPath(id)) { bytes += Int64(snapshot.st_size) }
            if let record = try? Sys.stat(recordPath(id)) {
                bytes += Int64(record.st_size)
                if let data = try? Sys.readFile(recordPath(id)),
                   let info = try? JSONDecoder().decode(MovieInfo.self, from: Data(data)) { keep = info.keep ?? false }
            }
            out.append(StoredEntry(id: id, camera: parsed.camera, time: Double(parsed.micros) / 1e6, bytes: bytes, keep: keep))
        }
        return (out, writing)
    }

    // MARK: - Start-up

    /// Repairs and lists every recording left unfinished; call before any recording starts.
    /// Answers the movies recovered (a file with nothing playable is removed).
    @discardableResult
    public func recoverUnfinished() -> [MovieInfo] {
        let names = files.names()
        var recovered: [MovieInfo] = []
        for name in names where name.hasPrefix(".") && name.hasSuffix(".mp4.part") {
            let id = String(name.dropFirst().dropLast(".mp4.part".count))
            guard let parsed = Self.parse(id) else { continue }
            let motion = Sys.exists(motionMarkPath(id))
            if let info = try? finalize(id: id, camera: parsed.camera, startedAt: Double(parsed.micros) / 1e6,
                                        reason: .recovered, timelapse: false, trigger: motion ? .motion : .manual) {
                recovered.append(info)
            }
        }
        return recovered
    }

    /// Cuts a partial file back to its whole fragments, reads what it holds and publishes
    /// it as `reason`; nil (and the file removed) when nothing in it plays.
    func finalize(id: String, camera: String?, startedAt: Double, reason: RecordingEndReason, timelapse: Bool,
                  trigger: MovieTrigger = .manual, event: MovieEvent? = nil, snapshot: Bool = false) throws(MovieError) -> MovieInfo? {
        let partial = partialPath(id)
        let fragments = try MP4Repair.repair(partial)
        guard fragments > 0, let facts = try? MovieProbe.probe(partial), facts.frames > 0 else {
            try? Sys.unlink(partial)
            try? Sys.unlink(motionMarkPath(id))
            return nil
        }
        let bytes = (try? Sys.stat(partial)).map { Int64($0.st_size) } ?? 0
        let info = MovieInfo(id: id, url: Self.url(id), camera: camera, codec: facts.codec, width: facts.width,
                             height: facts.height, rotation: facts.rotation, frames: facts.frames,
                             duration: MovieInfo.seconds(facts.duration), bytes: bytes, startedAt: StoredName.iso8601(startedAt),
                             reason: reason, timelapse: timelapse, trigger: trigger, event: event,
                             snapshot: snapshot ? Self.snapshotURL(id) : nil, audio: facts.audio)
        try publish(info)
        return info
    }
}
